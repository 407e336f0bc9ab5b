import { useMutation, useQuery } from "@urql/vue";
import { computed, type Ref } from "vue";
import { AccountsQuery, CreateCustomerMutation } from "../../graphql/operator";
import type { CreateCustomerInput } from "../../graphql/generated/graphql";

/** One page of customer accounts, optionally only those whose name matches a search. */
export function useCustomerList(search: Ref<string | null>, first: number, offset: Ref<number>) {
  const query = useQuery({
    query: AccountsQuery,
    variables: () => ({ search: search.value, first, offset: offset.value }),
    requestPolicy: "cache-and-network",
  });
  return {
    /** the page: nodes and the total that matched */
    accounts: computed(() => query.data.value?.accounts),
    fetching: query.fetching,
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}

/** Opens a customer account, with its first owner or an invitation. */
export function useCreateCustomer() {
  const op = useMutation(CreateCustomerMutation);
  return {
    creating: op.fetching,
    error: op.error,
    create: (input: CreateCustomerInput) => op.executeMutation({ input }),
  };
}
