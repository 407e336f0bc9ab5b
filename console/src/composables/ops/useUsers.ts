import { useMutation, useQuery } from "@urql/vue";
import { computed } from "vue";
import { AccountsQuery, CreateUserMutation, UsersQuery } from "../../graphql/operator";
import type { UserRole } from "../../graphql/generated/graphql";

/** How many accounts the user form offers to choose from. */
const ACCOUNT_CHOICES = 200;

export interface NewUser {
  email: string;
  password: string;
  role: UserRole;
  accountId: string | null;
  name: string | null;
}

/** Every user (operators, and customers' owners and members), the accounts a new user can join, and creating one. */
export function useUsers() {
  const query = useQuery({ query: UsersQuery, requestPolicy: "cache-and-network" });
  const accounts = useQuery({ query: AccountsQuery, variables: { search: null, first: ACCOUNT_CHOICES, offset: 0 } });
  const createOp = useMutation(CreateUserMutation);
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  return {
    users: computed(() => query.data.value?.users),
    accounts: computed(() => accounts.data.value?.accounts.nodes ?? []),
    fetching: query.fetching,
    error: query.error,
    refresh,
    creating: createOp.fetching,
    createError: createOp.error,
    async create(user: NewUser) {
      const r = await createOp.executeMutation(user);
      if (!r.error) void refresh();
      return r;
    },
  };
}
