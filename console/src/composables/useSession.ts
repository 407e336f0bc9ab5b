import type { Client } from "@urql/vue";
import { computed, reactive } from "vue";
import { MeQuery } from "../graphql/session";
import type { UserFieldsFragment as User } from "../graphql/generated/graphql";

interface SessionState {
  loaded: boolean;
  user: User | null;
  recoveryCodesLeft: number;
  /** why the user was sent to the sign-in page */
  notice: "expired" | "signed-out" | null;
}

const state = reactive<SessionState>({ loaded: false, user: null, recoveryCodesLeft: 0, notice: null });
let loading: Promise<void> | null = null;

/** Asks the server who is signed in (once; `refresh` asks again). */
export function loadSession(client: Client, refresh = false): Promise<void> {
  if (state.loaded && !refresh) return Promise.resolve();
  loading ??= client
    .query(MeQuery, {}, { requestPolicy: "network-only" })
    .toPromise()
    .then((r) => {
      state.user = r.data?.me?.user ?? null;
      state.recoveryCodesLeft = r.data?.me?.recoveryCodesLeft ?? 0;
      state.loaded = true;
    })
    .finally(() => (loading = null));
  return loading;
}

export function useSession() {
  return {
    state,
    user: computed(() => state.user),
    account: computed(() => state.user?.account ?? null),
    currency: computed(() => state.user?.account?.currency ?? ""),
    isOwner: computed(() => state.user?.role === "owner"),
    isOperator: computed(() => state.user?.role === "operator" && !state.user.account),
    setUser(user: User | null) {
      state.user = user;
      state.loaded = true;
      if (user) state.notice = null;
    },
    expire() {
      state.user = null;
      state.loaded = true;
      state.notice = "expired";
    },
    signedOut() {
      state.user = null;
      state.loaded = true;
      state.notice = "signed-out";
    },
  };
}
