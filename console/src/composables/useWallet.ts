import { useQuery } from "@urql/vue";
import { computed } from "vue";
import { LedgerQuery, WalletQuery } from "../graphql/wallet";
import { useCursorPages } from "./useCursorPages";

export function useWallet() {
  const query = useQuery({ query: WalletQuery, requestPolicy: "cache-and-network" });
  return {
    wallet: computed(() => query.data.value?.wallet),
    fetching: query.fetching,
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}

export const LEDGER_PAGE_SIZE = 25;

export function useLedger() {
  const pages = useCursorPages();
  const query = useQuery({
    query: LedgerQuery,
    variables: () => ({ first: LEDGER_PAGE_SIZE, after: pages.after.value }),
    requestPolicy: "cache-and-network",
  });
  const page = computed(() => query.data.value?.ledger);
  return {
    entries: computed(() => page.value?.nodes ?? []),
    loaded: computed(() => page.value !== undefined),
    /** the connection (hasNextPage, endCursor) and the cursors seen, for CursorPager */
    page,
    pages,
    fetching: query.fetching,
    error: query.error,
  };
}
