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
  /** cost attribution filters: an end user reads usage_logs alone, a tag its hourly rollup (usage_tag_hourly) */
  endUser?: string | null;
  tag?: string | null;
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
  coalesce(sum(requests), 0)::bigint AS requests,
  coalesce(sum(errors), 0)::bigint AS errors,
  coalesce(sum(prompt_tokens), 0)::bigint AS "promptTokens",
  coalesce(sum(completion_tokens), 0)::bigint AS "completionTokens",
  coalesce(sum(reasoning_tokens), 0)::bigint AS "reasoningTokens",
  coalesce(sum(cached_tokens), 0)::bigint AS "cachedTokens",
  coalesce(sum(cost_micro), 0)::bigint AS "costMicro"`;

const HOUR = 3_600_000;
const NIL_KEY = "00000000-0000-0000-0000-000000000000";

/**
 * The account's usage in [from, to) as rows of (ts, model, api_key_id, counts…): whole hours come from the
 * hourly rollup (kept by a trigger on usage_logs; for one tag, the tag's hourly rollup), the partial hours at
 * either edge from usage_logs itself, so a month costs about 720 × keys × models rollup rows plus at most two
 * hours of log rows, exactly. An end user's usage is a range of the log's end-user index.
 */
function usageSource(accountId: string, f: Omit<StatsFilter, "granularity" | "timeZone">) {
  const fromCeil = new Date(Math.ceil(f.from.getTime() / HOUR) * HOUR);
  const toFloor = new Date(Math.floor(f.to.getTime() / HOUR) * HOUR);
  const logFilters = [Prisma.sql`account_id = ${accountId}::uuid`];
  const hourFilters = [Prisma.sql`account_id = ${accountId}::uuid`];
  if (f.apiKeyId) {
    logFilters.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
    hourFilters.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
  }
  if (f.model) {
    logFilters.push(Prisma.sql`model = ${f.model}`);
    hourFilters.push(Prisma.sql`model = ${f.model}`);
  }
  if (f.endUser) logFilters.push(Prisma.sql`end_user = ${f.endUser}`);
  if (f.tag) logFilters.push(Prisma.sql`tags @> ARRAY[${f.tag}]::text[] AND tags <> '{}'`);
  const fromLog = (from: Date, to: Date) => Prisma.sql`
    SELECT started_at AS ts, model, api_key_id, 1 AS requests, (status < 200 OR status >= 300)::int AS errors,
           prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro
    FROM usage_logs WHERE ${Prisma.join(logFilters, " AND ")} AND started_at >= ${from} AND started_at < ${to}`;
  // Less than one whole hour, or an end user: the log alone.
  if (fromCeil >= toFloor || f.endUser) return fromLog(f.from, f.to);
  if (f.tag) hourFilters.push(Prisma.sql`tag = ${f.tag}`);
  const rollup = f.tag ? Prisma.sql`usage_tag_hourly` : Prisma.sql`usage_hourly`;
  return Prisma.sql`
    SELECT hour AS ts, model, NULLIF(api_key_id, ${NIL_KEY}::uuid) AS api_key_id, requests, errors,
           prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro
    FROM ${rollup} WHERE ${Prisma.join(hourFilters, " AND ")} AND hour >= ${fromCeil} AND hour < ${toFloor}
    UNION ALL ${fromLog(f.from, fromCeil)}
    UNION ALL ${fromLog(toFloor, f.to)}`;
}

/**
 * One pass over the account's usage (see usageSource): GROUPING SETS computes the time series, the per-model
 * and per-key breakdowns and the totals together. Buckets are whole hours of UTC: in a time zone whose
 * offset is not a whole number of hours, an hourly bucket holds the UTC hour that starts in it.
 */
export async function usageStats(ctx: ServiceContext, accountId: string, f: StatsFilter) {
  checkStatsFilter(f);
  const rows = await ctx.prisma.$queryRaw<
    (Totals & { bucket: Date | null; model: string | null; apiKeyId: string | null; grouping: number })[]
  >`
    SELECT bucket, model, "apiKeyId", GROUPING(bucket, model, "apiKeyId")::int AS grouping, ${sums}
    FROM (
      SELECT date_trunc(${f.granularity}, ts, ${f.timeZone}) AS bucket, model, api_key_id::text AS "apiKeyId",
             requests, errors, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro
      FROM (${usageSource(accountId, f)}) AS s
    ) AS u
    GROUP BY GROUPING SETS ((bucket), (model), ("apiKeyId"), ())`;
  // GROUPING's bits (bucket, model, key): 0b011 = by bucket, 0b101 = by model, 0b110 = by key, 0b111 = total.
  const strip = <T extends object>(r: T) => {
    const {
      bucket: _b,
      model: _m,
      apiKeyId: _k,
      grouping: _g,
      ...totals
    } = r as T & { bucket: unknown; model: unknown; apiKeyId: unknown; grouping: unknown };
    return totals as unknown as Totals;
  };
  const series = rows
    .filter((r) => r.grouping === 0b011)
    .map((r) => ({ bucket: r.bucket!, ...strip(r) }))
    .sort((a, b) => a.bucket.getTime() - b.bucket.getTime());
  const byCost = <T extends Totals>(a: T, b: T, ka: string, kb: string) =>
    a.costMicro === b.costMicro ? (ka < kb ? -1 : ka > kb ? 1 : 0) : a.costMicro > b.costMicro ? -1 : 1;
  const byModel = rows
    .filter((r) => r.grouping === 0b101)
    .map((r) => ({ model: r.model!, ...strip(r) }))
    .sort((a, b) => byCost(a, b, a.model, b.model));
  const byKey = rows
    .filter((r) => r.grouping === 0b110)
    .map((r) => ({ apiKeyId: r.apiKeyId, ...strip(r) }))
    .sort((a, b) => byCost(a, b, a.apiKeyId ?? "", b.apiKeyId ?? ""));
  const total = rows.find((r) => r.grouping === 0b111);
  const empty: Totals = {
    requests: 0n,
    errors: 0n,
    promptTokens: 0n,
    completionTokens: 0n,
    reasoningTokens: 0n,
    cachedTokens: 0n,
    costMicro: 0n,
  };
  return { series, byModel, byKey, total: total ? strip(total) : empty };
}

export type AttributionDimension = "endUser" | "tag";

const DAY = 86_400_000;
const FIGURES = [
  "requests",
  "errors",
  "prompt_tokens",
  "completion_tokens",
  "reasoning_tokens",
  "cached_tokens",
  "cost_micro",
] as const;
const figureSums = Prisma.raw(FIGURES.map((c) => `coalesce(sum(${c}), 0)::bigint AS ${c}`).join(", "));

/**
 * Usage grouped by end user or by tag (a call with several tags counts under each): the largest 100 by cost.
 * Calls without an end user group under null; calls without tags are left out of byTag.
 *
 * By end user: whole UTC days come from the daily attribution rollup (kept by a trigger on usage_logs), the
 * partial days at either edge from the log, so a month costs about 30 × the values used a day plus at most two
 * days of attributed log rows; it knows neither keys nor models, so a filter on a key, a model or a tag reads the
 * log alone (an end-user filter is one row of the rollup per day).
 *
 * By tag: whole hours come from the tag's hourly rollup (per key and model, so those filters read it too), the
 * partial hours at either edge from the log. It does not know which tags a call carried together, nor its end
 * user, so a filter on a tag or an end user reads the log alone.
 */
export async function usageByAttribution(
  ctx: ServiceContext,
  accountId: string,
  f: Omit<StatsFilter, "granularity" | "timeZone">,
  by: AttributionDimension,
) {
  if (f.from >= f.to) throw badInput("'from' must be before 'to'", "from");
  const logFilters = [Prisma.sql`account_id = ${accountId}::uuid`];
  if (f.apiKeyId) logFilters.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
  if (f.model) logFilters.push(Prisma.sql`model = ${f.model}`);
  if (f.endUser) logFilters.push(Prisma.sql`end_user = ${f.endUser}`);
  if (f.tag) logFilters.push(Prisma.sql`tags @> ARRAY[${f.tag}]::text[] AND tags <> '{}'`);
  const key = by === "endUser" ? Prisma.sql`end_user` : Prisma.sql`t.tag`;
  const table =
    by === "endUser" ? Prisma.sql`usage_logs` : Prisma.sql`usage_logs CROSS JOIN LATERAL unnest(tags) AS t(tag)`;
  const fromLog = (from: Date, to: Date, ...more: Prisma.Sql[]) => Prisma.sql`
    SELECT ${key} AS key, 1 AS requests, (status < 200 OR status >= 300)::int AS errors, prompt_tokens,
           completion_tokens, reasoning_tokens, cached_tokens, cost_micro
    FROM ${table}
    WHERE ${Prisma.join([...logFilters, ...more], " AND ")} AND started_at >= ${from} AND started_at < ${to}`;
  const fromDay = new Date(Math.ceil(f.from.getTime() / DAY) * DAY);
  const toDay = new Date(Math.floor(f.to.getTime() / DAY) * DAY);
  let source: Prisma.Sql;
  const fromHour = new Date(Math.ceil(f.from.getTime() / HOUR) * HOUR);
  const toHour = new Date(Math.floor(f.to.getTime() / HOUR) * HOUR);
  // Grouped by tag and filtered by a tag, a call counts under each tag it carries with the filter's; grouped by tag
  // and filtered by an end user, under that user's tags: neither is in the rollup.
  if (by === "tag" && !f.tag && !f.endUser && fromHour < toHour) {
    const hourFilters = [
      Prisma.sql`account_id = ${accountId}::uuid`,
      Prisma.sql`hour >= ${fromHour}`,
      Prisma.sql`hour < ${toHour}`,
    ];
    if (f.apiKeyId) hourFilters.push(Prisma.sql`api_key_id = ${f.apiKeyId}::uuid`);
    if (f.model) hourFilters.push(Prisma.sql`model = ${f.model}`);
    const tagged = Prisma.sql`tags <> '{}'`;
    source = Prisma.sql`
      SELECT tag AS key, requests, errors, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens,
             cost_micro
      FROM usage_tag_hourly WHERE ${Prisma.join(hourFilters, " AND ")}
      UNION ALL ${fromLog(f.from, fromHour, tagged)}
      UNION ALL ${fromLog(toHour, f.to, tagged)}`;
  }
  // Grouped by tag, only a tag or end-user filter or a span without a whole hour gets past the hourly rollup, and
  // none of them could use the daily one (a whole day is whole hours): they read the log.
  else if (by === "tag" || fromDay >= toDay || f.apiKeyId || f.model || f.tag) source = fromLog(f.from, f.to);
  else {
    const rollupFilters = [
      Prisma.sql`account_id = ${accountId}::uuid`,
      Prisma.sql`dimension = 'end_user'`,
      Prisma.sql`day >= ${fromDay}`,
      Prisma.sql`day < ${toDay}`,
    ];
    if (f.endUser) rollupFilters.push(Prisma.sql`value = ${f.endUser}`);
    // The edge days' attributed rows only: those with an end user are a range of the partial end-user index.
    const attributed = Prisma.sql`end_user IS NOT NULL`;
    const named = Prisma.sql`
      SELECT value AS key, requests, errors, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens,
             cost_micro
      FROM usage_attribution_daily WHERE ${Prisma.join(rollupFilters, " AND ")}
      UNION ALL ${fromLog(f.from, fromDay, attributed)}
      UNION ALL ${fromLog(toDay, f.to, attributed)}`;
    // The calls without an end user (the null group) are in neither: they are the span's totals (the hourly
    // rollup, and the log for the partial hours at its edges) minus its end users', every figure being a sum.
    // (While an old unpartitioned log is being converted, its rows not yet copied are in the hourly rollup and
    // not in this one, so they count under null until they are copied.)
    const diff = (c: string) => Prisma.raw(`t.${c} - n.${c} AS ${c}`);
    const nullGroup = !f.endUser
      ? Prisma.sql`UNION ALL SELECT * FROM (
            SELECT NULL::text AS key, ${Prisma.join(FIGURES.map(diff))}
            FROM (SELECT ${figureSums} FROM (${usageSource(accountId, { from: f.from, to: f.to })}) AS s) t,
                 (SELECT ${figureSums} FROM named) n
          ) g WHERE requests <> 0`
      : Prisma.empty;
    source = Prisma.sql`WITH named AS MATERIALIZED (${named}) SELECT * FROM named ${nullGroup}`;
  }
  return ctx.prisma.$queryRaw<(Totals & { key: string | null })[]>`
    SELECT key, ${sums}
    FROM (${source}) AS s
    GROUP BY 1 ORDER BY "costMicro" DESC, 1 LIMIT 100`;
}

/** Spend in [from, to) — the wallet's "today" and "this month". */
export async function spendBetween(ctx: ServiceContext, accountId: string, from: Date, to: Date): Promise<Totals> {
  const rows = await ctx.prisma.$queryRaw<Totals[]>`SELECT ${sums} FROM (${usageSource(accountId, { from, to })}) AS s`;
  return rows[0]!;
}
