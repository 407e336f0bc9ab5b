import type { Prisma } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { badInput } from "../services/errors.ts";

// The usage log: newest first, keyset (cursor) pagination on (started_at, id), so a page costs the same at any
// depth and rows arriving meanwhile never shift a page.

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

export const encodeCursor = (startedAt: Date, id: string) =>
  Buffer.from(JSON.stringify([startedAt.toISOString(), id])).toString("base64url");

export function decodeCursor(cursor: string): { startedAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [string, string];
    const startedAt = new Date(t);
    if (Number.isNaN(startedAt.getTime()) || typeof id !== "string") throw new Error();
    return { startedAt, id };
  } catch {
    throw badInput("the cursor is not valid", "after");
  }
}

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
  const base = usageWhere(accountId, filter);
  const where: Prisma.UsageLogWhereInput = after
    ? (() => {
        const c = decodeCursor(after);
        return {
          AND: [base, { OR: [{ startedAt: { lt: c.startedAt } }, { startedAt: c.startedAt, id: { lt: c.id } }] }],
        };
      })()
    : base;
  const rows = await ctx.prisma.usageLog.findMany({
    where,
    orderBy: [{ startedAt: "desc" }, { id: "desc" }],
    take: first + 1,
  });
  const hasNextPage = rows.length > first;
  const nodes = hasNextPage ? rows.slice(0, first) : rows;
  const last = nodes[nodes.length - 1];
  return { nodes, hasNextPage, endCursor: last ? encodeCursor(last.startedAt, last.id) : null };
}
