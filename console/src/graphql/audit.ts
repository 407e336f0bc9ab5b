import { gql } from "@urql/vue";
import type { Page } from "./types";

export interface AuditEntry {
  id: string;
  createdAt: string;
  actorType: string;
  actorEmail: string | null;
  actorVia: string | null;
  actorAddress: string | null;
  action: string;
  accountId: string | null;
  subjectType: string;
  subjectId: string | null;
  before: string | null;
  after: string | null;
}

export interface AuditFilterInput {
  action?: string | null;
  accountId?: string | null;
  subjectId?: string | null;
  from?: string | null;
  to?: string | null;
}

export const AuditLogQuery = gql<
  { auditLog: Page<AuditEntry> },
  { first: number; after: string | null; filter: AuditFilterInput }
>`
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
`;

export const StartAuditExportMutation = gql<
  { startAuditExport: { id: string; status: string } },
  { format: "CSV" | "JSONL"; filter: AuditFilterInput }
>`
  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {
    startAuditExport(format: $format, filter: $filter) {
      id
      status
    }
  }
`;

export const AuditExportQuery = gql<
  { export: { id: string; status: string; rowCount: number; downloadUrl: string | null; error: string | null } },
  { id: string }
>`
  query AuditExport($id: ID!) {
    export(id: $id) {
      id
      status
      rowCount
      downloadUrl
      error
    }
  }
`;
