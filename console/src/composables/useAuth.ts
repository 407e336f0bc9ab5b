import { useClientHandle, useMutation } from "@urql/vue";
import { LoginMutation, LogoutMutation, VerifySecondStepMutation } from "../graphql/session";
import { loadSession, useSession } from "./useSession";

/** Sign-in (with the optional second step) and sign-out. */
export function useAuth() {
  const session = useSession();
  const client = useClientHandle().client;
  const loginOp = useMutation(LoginMutation);
  const secondOp = useMutation(VerifySecondStepMutation);
  const logoutOp = useMutation(LogoutMutation);
  return {
    signingIn: loginOp.fetching,
    verifying: secondOp.fetching,
    async login(email: string, password: string) {
      const r = await loginOp.executeMutation({ email, password });
      if (r.data?.login.user) session.setUser(r.data.login.user);
      return r;
    },
    async verifySecondStep(code: string) {
      const r = await secondOp.executeMutation({ code });
      if (r.data) session.setUser(r.data.verifySecondStep);
      return r;
    },
    /** After sign-in: the recovery-code count and other viewer fields. */
    reload: () => loadSession(client, true),
    async logout() {
      await logoutOp.executeMutation({});
      session.signedOut();
    },
  };
}
