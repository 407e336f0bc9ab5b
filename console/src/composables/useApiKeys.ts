import { useMutation, useQuery } from "@urql/vue";
import { computed } from "vue";
import { SetApiKeyBudgetsMutation } from "../graphql/budgets";
import { ApiKeysQuery, CreateApiKeyMutation, RevokeApiKeyMutation, UpdateApiKeyMutation } from "../graphql/keys";
import type { ApiKeyRestrictionsInput, BudgetsInput } from "../graphql/generated/graphql";
import { refreshing } from "./refreshing";

/** The account's keys, with create, update, revoke and a key's own budgets; the list refreshes after each change. */
export function useApiKeys() {
  const query = useQuery({
    query: ApiKeysQuery,
    requestPolicy: "cache-and-network",
    context: { additionalTypenames: ["ApiKey"] },
  });
  const createOp = useMutation(CreateApiKeyMutation);
  const updateOp = useMutation(UpdateApiKeyMutation);
  const revokeOp = useMutation(RevokeApiKeyMutation);
  const setBudgetsOp = useMutation(SetApiKeyBudgetsMutation);
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });

  return {
    keys: computed(() => query.data.value?.apiKeys ?? []),
    loaded: computed(() => query.data.value !== undefined),
    fetching: query.fetching,
    error: query.error,
    refresh,
    creating: createOp.fetching,
    updating: updateOp.fetching,
    revoking: revokeOp.fetching,
    savingBudgets: setBudgetsOp.fetching,
    create: refreshing((input: ApiKeyRestrictionsInput) => createOp.executeMutation({ input }), refresh),
    update: refreshing(
      (id: string, input: ApiKeyRestrictionsInput) => updateOp.executeMutation({ id, input }),
      refresh,
    ),
    revoke: refreshing((id: string) => revokeOp.executeMutation({ id }), refresh),
    setBudgets: refreshing((id: string, input: BudgetsInput) => setBudgetsOp.executeMutation({ id, input }), refresh),
  };
}
