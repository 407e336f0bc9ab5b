import type { Db } from "../db/client.ts";
import type { AuditLog, Prisma } from "../generated/prisma/client.ts";
import { badInput } from "../errors/app-error.ts";
import { decodeCursor, encodeCursor } from "../db/cursor.ts";

// The audit log's read side: newest first, keyset pagination on (created_at, id) like the usage log, so a page
// costs the same at any depth and rows written meanwhile never shift a page.

export interface AuditFilter {
  /** one account's rows (owners: always their own) */
  accountId?: string | null;
  actorUserId?: string | null;
  /** user, admin_token, cli, anonymous or system */
  actorType?: string | null;
  /** an exact action (account.topup), or a family ending in ".*" (account.*) */
  action?: string | null;
  subjectType?: string | null;
  subjectId?: string | null;
  /** inclusive */
  from?: Date | null;
  /** exclusive */
  to?: Date | null;
}

export function auditWhere(f: AuditFilter): Prisma.AuditLogWhereInput {
  if (f.from && f.to && f.from >= f.to) throw badInput("'from' must be before 'to'", "from");
  const where: Prisma.AuditLogWhereInput = {};
  if (f.accountId) where.accountId = f.accountId;
  if (f.actorUserId) where.actorUserId = f.actorUserId;
  if (f.actorType) where.actorType = f.actorType;
  if (f.action) {
    if (f.action.length > 100) throw badInput("the action filter is too long", "action");
    where.action = f.action.endsWith(".*") ? { startsWith: f.action.slice(0, -1) } : f.action;
  }
  if (f.subjectType) where.subjectType = f.subjectType;
  if (f.subjectId) where.subjectId = f.subjectId;
  if (f.from || f.to) where.createdAt = { ...(f.from ? { gte: f.from } : {}), ...(f.to ? { lt: f.to } : {}) };
  return where;
}

export const MAX_AUDIT_PAGE = 200;

/** What an actor that is the operators' shows to others: no e-mail, no address, no user id. */
export const OPERATOR_ACTOR = "operator";

/**
 * Rows as a customer (an owner) may read them: an operator's e-mail and client address are the operators'
 * business, so a row whose actor is an operator (a user whose role is operator, the admin token, the CLI) shows
 * "operator" and no address. Operators read every row as written.
 */
export async function maskOperatorActors<T extends AuditLog>(prisma: Db, rows: T[]): Promise<T[]> {
  const ids = [...new Set(rows.flatMap((r) => (r.actorType === "user" && r.actorUserId ? [r.actorUserId] : [])))];
  const operators = new Set(
    ids.length === 0
      ? []
      : (await prisma.user.findMany({ where: { id: { in: ids }, role: "operator" }, select: { id: true } })).map(
          (u) => u.id,
        ),
  );
  return rows.map((r) =>
    r.actorType === "admin_token" || r.actorType === "cli" || (r.actorUserId && operators.has(r.actorUserId))
      ? { ...r, actorEmail: OPERATOR_ACTOR, actorAddress: null, actorUserId: null }
      : r,
  );
}

export async function auditPage(
  ctx: { prisma: Db },
  filter: AuditFilter,
  first: number,
  after?: string | null,
  readerIsOperator = true,
) {
  if (!Number.isInteger(first) || first < 1 || first > MAX_AUDIT_PAGE)
    throw badInput(`first must be 1..${MAX_AUDIT_PAGE}`, "first");
  const base = auditWhere(filter);
  let where = base;
  if (after) {
    const c = decodeCursor(after);
    where = { AND: [base, { OR: [{ createdAt: { lt: c.startedAt } }, { createdAt: c.startedAt, id: { lt: c.id } }] }] };
  }
  const rows: AuditLog[] = await ctx.prisma.auditLog.findMany({
    where,
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: first + 1,
  });
  const hasNextPage = rows.length > first;
  const page = hasNextPage ? rows.slice(0, first) : rows;
  const last = page[page.length - 1];
  const nodes = readerIsOperator ? page : await maskOperatorActors(ctx.prisma, page);
  return { nodes, hasNextPage, endCursor: last ? encodeCursor(last.createdAt, last.id) : null };
}

// ---- export ----

export const AUDIT_COLUMNS = [
  "created_at",
  "id",
  "actor_type",
  "actor_user_id",
  "actor_email",
  "actor_via",
  "actor_address",
  "action",
  "account_id",
  "subject_type",
  "subject_id",
  "before",
  "after",
] as const;

export function auditRecord(r: AuditLog) {
  return {
    created_at: r.createdAt.toISOString(),
    id: r.id,
    actor_type: r.actorType,
    actor_user_id: r.actorUserId,
    actor_email: r.actorEmail,
    actor_via: r.actorVia,
    actor_address: r.actorAddress,
    action: r.action,
    account_id: r.accountId,
    subject_type: r.subjectType,
    subject_id: r.subjectId,
    before: r.before ?? null,
    after: r.after ?? null,
  } satisfies Record<(typeof AUDIT_COLUMNS)[number], unknown>;
}

export interface StoredAuditFilter {
  accountId?: string;
  actorUserId?: string;
  actorType?: string;
  action?: string;
  subjectType?: string;
  subjectId?: string;
  from?: string;
  to?: string;
}

export function storeAuditFilter(f: AuditFilter): StoredAuditFilter {
  const out: StoredAuditFilter = {};
  for (const k of ["accountId", "actorUserId", "actorType", "action", "subjectType", "subjectId"] as const) {
    const v = f[k];
    if (v) out[k] = v;
  }
  if (f.from) out.from = f.from.toISOString();
  if (f.to) out.to = f.to.toISOString();
  return out;
}

export const loadAuditFilter = (s: StoredAuditFilter): AuditFilter => ({
  ...s,
  from: s.from ? new Date(s.from) : null,
  to: s.to ? new Date(s.to) : null,
});
