import { Prisma, type UsageLog } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { decodeCursor, encodeCursor } from "../db/cursor.ts";
import { badInput } from "../services/errors.ts";

// The usage log: newest first, keyset (cursor) pagination on (started_at, id), so a page costs the same at any
// depth and rows arriving meanwhile never shift a page. The cursor is a row comparison, "(started_at, id) <
// (…)": every index of the log ends with (started_at, id), so it bounds the index scan and a page reads only the
// rows it returns (the form "started_at < t OR (started_at = t AND id < i)" is not an index bound: each page
// scanned and sorted everything after its cursor). Prisma cannot write a row comparison, so pages are plain SQL.

export interface UsageFilter {
  from?: Date | null;
  to?: Date | null;
  apiKeyId?: string | null;
  model?: string | null;
  /** exact HTTP status */
  status?: number | null;
  /** true: 2xx only; false: everything else */
  success?: boolean | null;
  /** cost attribution: the end user (OpenAI user, Anthropic metadata.user_id) */
  endUser?: string | null;
  /** cost attribution: rows carrying this tag ("team=search") */
  tag?: string | null;
}

export function usageWhere(accountId: string, f: UsageFilter): Prisma.UsageLogWhereInput {
  if (f.from && f.to && f.from >= f.to) throw badInput("'from' must be before 'to'", "from");
  const startedAt: Prisma.DateTimeFilter = {};
  if (f.from) startedAt.gte = f.from;
  if (f.to) startedAt.lt = f.to;
  const where: Prisma.UsageLogWhereInput = { accountId };
  if (f.from || f.to) where.startedAt = startedAt;
  if (f.apiKeyId) where.apiKeyId = f.apiKeyId;
  if (f.model) where.model = f.model;
  if (f.endUser) where.endUser = f.endUser;
  // tags <> '{}' as well: the tags index is partial (calls without tags are not in it)
  if (f.tag) where.AND = [{ tags: { has: f.tag } }, { tags: { isEmpty: false } }];
  if (f.status !== null && f.status !== undefined) where.status = f.status;
  else if (f.success === true) where.status = { gte: 200, lt: 300 };
  else if (f.success === false) where.OR = [{ status: { lt: 200 } }, { status: { gte: 300 } }];
  return where;
}

/**
 * The same filter as SQL conditions (usageWhere's twin for the queries written in SQL: pages and exports). The
 * tag condition also states tags <> '{}', as the partial tags index requires.
 */
export function usageConditions(accountId: string, f: UsageFilter): Prisma.Sql[] {
  usageWhere(accountId, f); // the same validation
  const c = [Prisma.sql`account_id = ${accountId}::uuid`];
  if (f.from) c.push(Prisma.sql`started_at >= ${f.from}`);
  if (f.to) c.push(Prisma.sql`started_at < ${f.to}`);
  if (f.apiKeyId) c.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
  if (f.model) c.push(Prisma.sql`model = ${f.model}`);
  if (f.endUser) c.push(Prisma.sql`end_user = ${f.endUser}`);
  if (f.tag) c.push(Prisma.sql`tags @> ARRAY[${f.tag}]::text[] AND tags <> '{}'`);
  if (f.status !== null && f.status !== undefined) c.push(Prisma.sql`status = ${f.status}`);
  else if (f.success === true) c.push(Prisma.sql`status >= 200 AND status < 300`);
  else if (f.success === false) c.push(Prisma.sql`(status < 200 OR status >= 300)`);
  return c;
}

/** Every column of a usage row under its Prisma field name: a row read in SQL is a UsageLog. */
export const USAGE_ROW = Prisma.sql`id::text AS id, request_id AS "requestId", account_id::text AS "accountId",
  api_key_id::text AS "apiKeyId", model, protocol, upstream, status, error_code AS "errorCode",
  prompt_tokens AS "promptTokens", completion_tokens AS "completionTokens", reasoning_tokens AS "reasoningTokens",
  cached_tokens AS "cachedTokens", input_tokens AS "inputTokens", cache_write_5m_tokens AS "cacheWrite5mTokens",
  cache_write_1h_tokens AS "cacheWrite1hTokens", cost_micro AS "costMicro", input_price AS "inputPrice",
  cached_input_price AS "cachedInputPrice", cache_write_5m_price AS "cacheWrite5mPrice",
  cache_write_1h_price AS "cacheWrite1hPrice", output_price AS "outputPrice", estimated, end_user AS "endUser",
  tags, dropped, latency_ms AS "latencyMs", ttft_ms AS "ttftMs", stream, client_ip AS "clientIp",
  started_at AS "startedAt", created_at AS "createdAt"`;

const DAY = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const MAX_PAGE = 200;

export async function usagePage(
  ctx: ServiceContext,
  accountId: string,
  filter: UsageFilter,
  first: number,
  after?: string | null,
) {
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE)
    throw badInput(`first must be 1..${MAX_PAGE}`, "first");
  const conditions = usageConditions(accountId, filter);
  let upper = filter.to ? filter.to.getTime() : null;
  if (after) {
    const c = decodeCursor(after);
    if (!UUID.test(c.id)) throw badInput("the cursor is not valid", "after");
    // the row comparison bounds the index; the plain bound lets the planner leave out newer partitions
    conditions.push(Prisma.sql`(started_at, id) < (${c.startedAt}::timestamptz, ${c.id}::uuid)`);
    conditions.push(Prisma.sql`started_at <= ${c.startedAt}`);
    upper = Math.min(upper ?? Infinity, c.startedAt.getTime() + 1);
  }
  // The log is partitioned by day: a query bounded in time plans and reads only its days' partitions, one
  // unbounded reads every partition's index once. A page is read from the newest days back, in widening windows
  // (1, 7, 31 days, then the rest), each the days just older than the last, until it is full: a busy account's
  // page comes from its last day, a quiet one's takes at most four queries.
  const from = filter.from ? filter.from.getTime() : null;
  const top = upper ?? Date.now();
  const rows: UsageLog[] = [];
  let newer: number | null = upper; // exclusive upper edge of the next window (null: none)
  for (const days of [1, 7, 31, null]) {
    let older = days === null ? null : top - days * DAY;
    if (older !== null && from !== null && older <= from) older = null; // the filter's own lower edge takes over
    const window = [...conditions];
    if (newer !== null && newer !== upper) window.push(Prisma.sql`started_at < ${new Date(newer)}`);
    if (older !== null) window.push(Prisma.sql`started_at >= ${new Date(older)}`);
    rows.push(
      ...(await ctx.prisma.$queryRaw<UsageLog[]>`
        SELECT ${USAGE_ROW} FROM usage_logs WHERE ${Prisma.join(window, " AND ")}
        ORDER BY started_at DESC, id DESC LIMIT ${first + 1 - rows.length}`),
    );
    if (rows.length > first || older === null) break;
    newer = older;
  }
  const hasNextPage = rows.length > first;
  const nodes = hasNextPage ? rows.slice(0, first) : rows;
  const last = nodes[nodes.length - 1];
  return { nodes, hasNextPage, endCursor: last ? encodeCursor(last.startedAt, last.id) : null };
}
