import { graphql } from "./generated";

export const AuditLogQuery = graphql(`
  query AuditLog($first: Int, $after: String, $filter: AuditFilter) {
    auditLog(first: $first, after: $after, filter: $filter) {
      endCursor
      hasNextPage
      nodes {
        id
        createdAt
        actorType
        actorEmail
        actorVia
        actorAddress
        action
        accountId
        subjectType
        subjectId
        before
        after
      }
    }
  }
`);

export const StartAuditExportMutation = graphql(`
  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {
    startAuditExport(format: $format, filter: $filter) {
      id
      status
    }
  }
`);

export const AuditExportQuery = graphql(`
  query AuditExport($id: ID!) {
    export(id: $id) {
      id
      status
      rowCount
      downloadUrl
      error
    }
  }
`);
