import { useQuery } from "@urql/vue";
import { computed } from "vue";
import { ModelsQuery } from "../graphql/models";

/** The models the account may call, with its prices. */
export function useModels() {
  const query = useQuery({ query: ModelsQuery, requestPolicy: "cache-and-network" });
  return {
    models: computed(() => query.data.value?.models ?? []),
    loaded: computed(() => query.data.value !== undefined),
    fetching: query.fetching,
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}
