import { useMutation, useQuery } from "@urql/vue";
import { computed } from "vue";
import { ApiKeysQuery, CreateApiKeyMutation, RevokeApiKeyMutation, UpdateApiKeyMutation } from "../graphql/keys";
import type { ApiKeyRestrictionsInput } from "../graphql/generated/graphql";

/** The account's keys, with create, update and revoke; the list refreshes after each change. */
export function useApiKeys() {
  const query = useQuery({
    query: ApiKeysQuery,
    requestPolicy: "cache-and-network",
    context: { additionalTypenames: ["ApiKey"] },
  });
  const createOp = useMutation(CreateApiKeyMutation);
  const updateOp = useMutation(UpdateApiKeyMutation);
  const revokeOp = useMutation(RevokeApiKeyMutation);
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
    async create(input: ApiKeyRestrictionsInput) {
      const r = await createOp.executeMutation({ input });
      if (!r.error) void refresh();
      return r;
    },
    async update(id: string, input: ApiKeyRestrictionsInput) {
      const r = await updateOp.executeMutation({ id, input });
      if (!r.error) void refresh();
      return r;
    },
    async revoke(id: string) {
      const r = await revokeOp.executeMutation({ id });
      if (!r.error) void refresh();
      return r;
    },
  };
}
