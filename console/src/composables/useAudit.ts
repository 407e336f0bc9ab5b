import { useClientHandle, useMutation, useQuery } from "@urql/vue";
import { computed, ref, type Ref } from "vue";
import { AuditExportQuery, AuditLogQuery, StartAuditExportMutation } from "../graphql/audit";
import type { AuditFilter } from "../graphql/generated/graphql";
import { describeError } from "./errors";
import { useCursorPages } from "./useCursorPages";

export const AUDIT_PAGE_SIZE = 25;

/** How long an audit export is followed: 120 reads, half a second apart (a minute). */
const EXPORT_POLLS = 120;
const EXPORT_POLL_MS = 500;

/** One page of the audit log for a filter; the page resets its cursors when it changes the filter. */
export function useAuditLog(filter: Ref<AuditFilter>) {
  const pages = useCursorPages();
  const query = useQuery({
    query: AuditLogQuery,
    variables: () => ({ first: AUDIT_PAGE_SIZE, after: pages.after.value, filter: filter.value }),
    requestPolicy: "cache-and-network",
  });
  return {
    /** the connection (nodes, hasNextPage, endCursor), for the table and CursorPager */
    page: computed(() => query.data.value?.auditLog),
    pages,
    fetching: query.fetching,
    error: query.error,
  };
}

/** An export of the audit log: started in the background, then read until it is ready or failed. */
export function useAuditExport() {
  const client = useClientHandle().client;
  const startOp = useMutation(StartAuditExportMutation);
  const state = ref<{ status: string; downloadUrl: string | null; rowCount: number; error: string | null } | null>(
    null,
  );
  const error = ref("");
  async function start(format: "CSV" | "JSONL", filter: AuditFilter) {
    error.value = "";
    const r = await startOp.executeMutation({ format, filter });
    if (r.error || !r.data) {
      error.value = describeError(r.error);
      return;
    }
    const id = r.data.startAuditExport.id;
    state.value = { status: "pending", downloadUrl: null, rowCount: 0, error: null };
    for (let i = 0; i < EXPORT_POLLS; i++) {
      const e = (await client.query(AuditExportQuery, { id }, { requestPolicy: "network-only" }).toPromise()).data
        ?.export;
      if (e) state.value = e;
      if (!e || e.status === "ready" || e.status === "failed") return;
      await new Promise((resolve) => setTimeout(resolve, EXPORT_POLL_MS));
    }
  }
  return { state, error, start };
}
