import { graphql } from "./generated";

export const UsageEntryFields = graphql(`
  fragment UsageEntryFields on UsageEntry {
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
    dropped
    prices {
      input
      cachedInput
      cacheWrite5m
      cacheWrite1h
      output
    }
  }
`);

export const UsageLogQuery = graphql(`
  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {
    usage(filter: $filter, first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        ...UsageEntryFields
      }
    }
  }
`);

/**
 * The figures of a set of calls (the schema's UsageFigures): what the dashboard, the usage page's attribution and
 * the operators' usage across customers show for a total, a bucket, a model, a key, an end user, a tag or a group.
 */
export const UsageFiguresFields = graphql(`
  fragment UsageFiguresFields on UsageFigures {
    requests
    totalTokens
    promptTokens
    completionTokens
    errors
    amount
  }
`);

export const UsageStatsQuery = graphql(`
  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {
    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {
      total {
        ...UsageFiguresFields
      }
      series {
        bucket
        ...UsageFiguresFields
      }
      byModel {
        model
        ...UsageFiguresFields
      }
      byKey {
        apiKeyId
        apiKeyName
        ...UsageFiguresFields
      }
    }
  }
`);

/** Cost attribution for the usage page: spend by end user and by tag over the filter's range. */
export const UsageAttributionQuery = graphql(`
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
        ...UsageFiguresFields
      }
      byTag {
        tag
        ...UsageFiguresFields
      }
    }
  }
`);

export const ExportJobFields = graphql(`
  fragment ExportJobFields on Export {
    id
    status
    format
    rowCount
    error
    downloadUrl
    createdAt
    finishedAt
  }
`);

export const StartExportMutation = graphql(`
  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {
    startExport(format: $format, filter: $filter) {
      ...ExportJobFields
    }
  }
`);

export const ExportQuery = graphql(`
  query Export($id: ID!) {
    export(id: $id) {
      ...ExportJobFields
    }
  }
`);

export const ExportsQuery = graphql(`
  query Exports {
    exports {
      ...ExportJobFields
    }
  }
`);
