import { useClientHandle, useMutation, useQuery } from "@urql/vue";
import { computed, onBeforeUnmount, ref, type Ref } from "vue";
import {
  ExportQuery,
  ExportsQuery,
  StartExportMutation,
  UsageAttributionQuery,
  UsageLogQuery,
  UsageStatsQuery,
} from "../graphql/usage";
import type { ExportJobFieldsFragment as ExportJob, UsageFilter } from "../graphql/generated/graphql";
import { browserTimeZone } from "./format";
import { useCursorPages } from "./useCursorPages";

export const USAGE_PAGE_SIZE = 25;

/** Spend grouped by one attribution dimension (end user or tag): the page shows both groupings with one table. */
export interface AttributionGroup {
  key: string | null;
  requests: number;
  totalTokens: number;
  amount: string;
}

/** One page of the usage log for a filter; changing the filter goes back to the first page. */
export function useUsageLog(filter: Ref<UsageFilter>) {
  const pages = useCursorPages();
  const query = useQuery({
    query: UsageLogQuery,
    variables: () => ({ filter: filter.value, first: USAGE_PAGE_SIZE, after: pages.after.value }),
    requestPolicy: "cache-and-network",
  });
  const page = computed(() => query.data.value?.usage);
  return {
    entries: computed(() => page.value?.nodes ?? []),
    loaded: computed(() => page.value !== undefined),
    /** the connection (hasNextPage, endCursor) and the cursors seen, for CursorPager */
    page,
    pages,
    fetching: query.fetching,
    error: query.error,
    reset: pages.reset,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}

/**
 * Spend by end user and by tag for the usage page's filter (the server's default range, the last 7 days, when
 * the filter names no dates).
 */
export function useUsageAttribution(filter: Ref<UsageFilter>) {
  const query = useQuery({
    query: UsageAttributionQuery,
    variables: () => ({
      from: filter.value.from ?? null,
      to: filter.value.to ?? null,
      apiKeyId: filter.value.apiKeyId ?? null,
      model: filter.value.model ?? null,
      endUser: filter.value.endUser ?? null,
      tag: filter.value.tag ?? null,
    }),
    requestPolicy: "cache-and-network",
  });
  const stats = computed(() => query.data.value?.usageStats);
  return {
    byEndUser: computed<AttributionGroup[]>(() =>
      (stats.value?.byEndUser ?? []).map((g) => ({ ...g, key: g.endUser })),
    ),
    byTag: computed<AttributionGroup[]>(() => (stats.value?.byTag ?? []).map((g) => ({ ...g, key: g.tag }))),
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}

export type Range = "24h" | "7d" | "30d";

function rangeStart(range: Range): Date {
  const d = new Date();
  if (range === "24h") {
    d.setMinutes(0, 0, 0);
    d.setHours(d.getHours() - 23);
  } else {
    d.setHours(0, 0, 0, 0);
    d.setDate(d.getDate() - (range === "7d" ? 6 : 29));
  }
  return d;
}

/** Usage trends: hourly for the last day, daily for the last week or month, optionally for one model. */
export function useUsageStats(range: Ref<Range>, model: Ref<string | null>) {
  const from = computed(() => rangeStart(range.value));
  const granularity = computed(() => (range.value === "24h" ? "HOUR" : "DAY") as "HOUR" | "DAY");
  const query = useQuery({
    query: UsageStatsQuery,
    variables: () => ({
      from: from.value.toISOString(),
      granularity: granularity.value,
      timeZone: browserTimeZone(),
      model: model.value,
    }),
    requestPolicy: "cache-and-network",
  });
  return {
    stats: computed(() => query.data.value?.usageStats),
    from,
    granularity,
    fetching: query.fetching,
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}

/** Starts an export of the usage log and follows it until it is ready, then hands over its download URL. */
export function useExport() {
  const client = useClientHandle().client;
  const startOp = useMutation(StartExportMutation);
  const recent = useQuery({ query: ExportsQuery, requestPolicy: "cache-and-network" });
  const job = ref<ExportJob | null>(null);
  const error = ref<string | null>(null);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const downloadUrl = (j: ExportJob) => j.downloadUrl ?? `/api/exports/${j.id}/download`;

  async function poll(id: string, onReady: (j: ExportJob) => void) {
    if (stopped) return;
    const r = await client.query(ExportQuery, { id }, { requestPolicy: "network-only" }).toPromise();
    if (stopped) return;
    if (r.error || !r.data) {
      error.value = r.error?.graphQLErrors[0]?.message ?? "The export's progress could not be read.";
      return;
    }
    job.value = r.data.export;
    if (job.value.status === "ready") {
      void recent.executeQuery({ requestPolicy: "network-only" });
      onReady(job.value);
    } else if (job.value.status === "failed") {
      error.value = job.value.error ?? "The export failed.";
    } else {
      timer = setTimeout(() => void poll(id, onReady), 700);
    }
  }

  onBeforeUnmount(() => {
    stopped = true;
    clearTimeout(timer);
  });

  return {
    job,
    error,
    starting: startOp.fetching,
    recent: computed(() => recent.data.value?.exports ?? []),
    downloadUrl,
    busy: computed(() => startOp.fetching.value || job.value?.status === "pending" || job.value?.status === "running"),
    async start(format: "CSV" | "JSONL", filter: UsageFilter, onReady: (j: ExportJob) => void) {
      error.value = null;
      clearTimeout(timer);
      const r = await startOp.executeMutation({ format, filter });
      if (r.error || !r.data) {
        error.value = r.error?.graphQLErrors[0]?.message ?? "The export could not be started.";
        return r.error;
      }
      job.value = r.data.startExport;
      void poll(job.value.id, onReady);
      return undefined;
    },
  };
}

export type ChartMetric = "requests" | "tokens" | "amount";
