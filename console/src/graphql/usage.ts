import { gql } from "@urql/vue";
import type { ExportJob, Page, UsageEntry, UsageFilter, UsageStats } from "./types";

export const UsageLogQuery = gql<
  { usage: Page<UsageEntry> },
  { filter: UsageFilter; first: number; after: string | null }
>`
  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {
    usage(filter: $filter, first: $first, after: $after) {
      endCursor hasNextPage
      nodes {
        id requestId startedAt apiKeyId model protocol status errorCode stream
        promptTokens completionTokens reasoningTokens cachedTokens totalTokens amount latencyMs ttftMs
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

const EXPORT_FIELDS = "id status format rowCount error downloadUrl createdAt finishedAt";

export const StartExportMutation = gql<
  { startExport: ExportJob },
  { format: "CSV" | "JSONL"; filter: UsageFilter }
>`
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
