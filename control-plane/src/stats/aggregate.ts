import { Prisma } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { badInput } from "../services/errors.ts";

// Usage trends, aggregated in Postgres (date_trunc in the caller's time zone), never by loading rows.

export type Granularity = "hour" | "day";

export interface StatsFilter {
  from: Date;
  to: Date;
  apiKeyId?: string | null;
  model?: string | null;
  granularity: Granularity;
  timeZone: string;
}

export interface Totals {
  requests: bigint;
  errors: bigint;
  promptTokens: bigint;
  completionTokens: bigint;
  reasoningTokens: bigint;
  cachedTokens: bigint;
  costMicro: bigint;
}

const MAX_BUCKETS = { hour: 24 * 31, day: 366 * 2 };

export function checkStatsFilter(f: StatsFilter) {
  if (f.from >= f.to) throw badInput("'from' must be before 'to'", "from");
  const span = (f.to.getTime() - f.from.getTime()) / (f.granularity === "hour" ? 3600_000 : 86_400_000);
  if (span > MAX_BUCKETS[f.granularity]) {
    throw badInput(`at most ${MAX_BUCKETS[f.granularity]} ${f.granularity}s per query`, "to");
  }
  try {
    new Intl.DateTimeFormat("en", { timeZone: f.timeZone });
  } catch {
    throw badInput(`unknown time zone ${f.timeZone}`, "timeZone");
  }
}

const sums = Prisma.sql`
  count(*)::bigint AS requests,
  count(*) FILTER (WHERE status < 200 OR status >= 300)::bigint AS errors,
  coalesce(sum(prompt_tokens), 0)::bigint AS "promptTokens",
  coalesce(sum(completion_tokens), 0)::bigint AS "completionTokens",
  coalesce(sum(reasoning_tokens), 0)::bigint AS "reasoningTokens",
  coalesce(sum(cached_tokens), 0)::bigint AS "cachedTokens",
  coalesce(sum(cost_micro), 0)::bigint AS "costMicro"`;

function where(accountId: string, f: Omit<StatsFilter, "granularity" | "timeZone">) {
  const parts = [
    Prisma.sql`account_id = ${accountId}::uuid`,
    Prisma.sql`started_at >= ${f.from}`,
    Prisma.sql`started_at < ${f.to}`,
  ];
  if (f.apiKeyId) parts.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
  if (f.model) parts.push(Prisma.sql`model = ${f.model}`);
  return Prisma.join(parts, " AND ");
}

export async function usageStats(ctx: ServiceContext, accountId: string, f: StatsFilter) {
  checkStatsFilter(f);
  const w = where(accountId, f);
  const [series, byModel, byKey, total] = await Promise.all([
    ctx.prisma.$queryRaw<(Totals & { bucket: Date })[]>`
      SELECT date_trunc(${f.granularity}, started_at, ${f.timeZone}) AS bucket, ${sums}
      FROM usage_logs WHERE ${w} GROUP BY 1 ORDER BY 1`,
    ctx.prisma.$queryRaw<(Totals & { model: string })[]>`
      SELECT model, ${sums} FROM usage_logs WHERE ${w} GROUP BY model ORDER BY "costMicro" DESC, model`,
    ctx.prisma.$queryRaw<(Totals & { apiKeyId: string | null })[]>`
      SELECT api_key_id::text AS "apiKeyId", ${sums} FROM usage_logs WHERE ${w}
      GROUP BY api_key_id ORDER BY "costMicro" DESC, 1`,
    ctx.prisma.$queryRaw<Totals[]>`SELECT ${sums} FROM usage_logs WHERE ${w}`,
  ]);
  return { series, byModel, byKey, total: total[0]! };
}

/** Spend in [from, to) — the wallet's "today" and "this month". */
export async function spendBetween(ctx: ServiceContext, accountId: string, from: Date, to: Date): Promise<Totals> {
  const rows = await ctx.prisma.$queryRaw<Totals[]>`SELECT ${sums} FROM usage_logs WHERE ${where(accountId, { from, to })}`;
  return rows[0]!;
}
