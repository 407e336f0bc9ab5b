import { gql } from "@urql/vue";
import type { ExportJob, Page, UsageEntry, UsageFilter, UsageStats } from "./types";

type Group = { requests: number; totalTokens: number; amount: string };

export const UsageLogQuery = gql<
  { usage: Page<UsageEntry> },
  { filter: UsageFilter; first: number; after: string | null }
>`
  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {
    usage(filter: $filter, first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        id
        requestId
        startedAt
        apiKeyId
        model
        protocol
        status
        errorCode
        stream
        promptTokens
        completionTokens
        reasoningTokens
        cachedTokens
        totalTokens
        amount
        latencyMs
        ttftMs
        inputTokens
        cacheWrite5mTokens
        cacheWrite1hTokens
        estimated
        endUser
        tags
        prices {
          input
          cachedInput
          cacheWrite5m
          cacheWrite1h
          output
        }
      }
    }
  }
`;

const FIGURES = "requests totalTokens promptTokens completionTokens errors amount";

export const UsageStatsQuery = gql<
  { usageStats: UsageStats },
  { from: string; granularity: "DAY" | "HOUR"; timeZone: string; model: string | null }
>`
  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {
    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {
      total { ${FIGURES} }
      series { bucket ${FIGURES} }
      byModel { model ${FIGURES} }
      byKey { apiKeyId apiKeyName ${FIGURES} }
    }
  }
`;

/** Cost attribution for the usage page: spend by end user and by tag over the filter's range. */
export const UsageAttributionQuery = gql<
  { usageStats: { byEndUser: (Group & { endUser: string | null })[]; byTag: (Group & { tag: string })[] } },
  {
    from: string | null;
    to: string | null;
    apiKeyId: string | null;
    model: string | null;
    endUser: string | null;
    tag: string | null;
  }
>`
  query UsageAttribution(
    $from: DateTime
    $to: DateTime
    $apiKeyId: ID
    $model: String
    $endUser: String
    $tag: String
  ) {
    usageStats(from: $from, to: $to, apiKeyId: $apiKeyId, model: $model, endUser: $endUser, tag: $tag) {
      byEndUser {
        endUser
        requests
        totalTokens
        amount
      }
      byTag {
        tag
        requests
        totalTokens
        amount
      }
    }
  }
`;

const EXPORT_FIELDS = "id status format rowCount error downloadUrl createdAt finishedAt";

export const StartExportMutation = gql<{ startExport: ExportJob }, { format: "CSV" | "JSONL"; filter: UsageFilter }>`
  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {
    startExport(format: $format, filter: $filter) { ${EXPORT_FIELDS} }
  }
`;

export const ExportQuery = gql<{ export: ExportJob }, { id: string }>`
  query Export($id: ID!) { export(id: $id) { ${EXPORT_FIELDS} } }
`;

export const ExportsQuery = gql<{ exports: ExportJob[] }, Record<string, never>>`
  query Exports { exports { ${EXPORT_FIELDS} } }
`;
