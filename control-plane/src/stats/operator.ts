import { Prisma } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { badInput } from "../services/errors.ts";
import type { Totals } from "./aggregate.ts";

// Operators' view across every customer: usage by customer, model and upstream, and each upstream's recent
// health (calls, errors, latency and time to first token) as the data planes reported it in the usage log.

export const MAX_SPAN_DAYS = 92;

/** One group's figures: the same as every usage statistic's (stats/aggregate.ts Totals). */
export interface GroupTotals extends Totals {
  key: string;
  label: string | null;
}

function checkSpan(from: Date, to: Date) {
  if (from >= to) throw badInput("'from' must be before 'to'", "from");
  if (to.getTime() - from.getTime() > MAX_SPAN_DAYS * 86_400_000)
    throw badInput(`at most ${MAX_SPAN_DAYS} days per query`, "to");
}

type Row = {
  key: string | null;
  label: string | null;
  requests: bigint;
  errors: bigint;
  prompt: bigint;
  completion: bigint;
  reasoning: bigint;
  cached: bigint;
  cost: bigint;
};
const toTotals = (r: Row): GroupTotals => ({
  key: r.key ?? "",
  label: r.label,
  requests: BigInt(r.requests),
  errors: BigInt(r.errors),
  promptTokens: BigInt(r.prompt),
  completionTokens: BigInt(r.completion),
  reasoningTokens: BigInt(r.reasoning),
  cachedTokens: BigInt(r.cached),
  costMicro: BigInt(r.cost),
});

const DAY = 86_400_000;

/**
 * The operators' rollup rows of [from, to): an hour counts when it starts in the span. Whole UTC days inside the
 * span come from usage_operator_daily, the hours before the first and after the last from usage_operator_hourly
 * (both keyed from their time: each part is one range scan, never the usage log), so 30 days read 30 days' rows
 * and at most 46 hours'.
 */
function operatorSource(from: Date, to: Date) {
  const firstDay = new Date(Math.ceil(from.getTime() / DAY) * DAY);
  const lastDay = new Date(Math.floor(to.getTime() / DAY) * DAY);
  const cols = Prisma.sql`account_id, model, upstream, requests, errors, prompt_tokens, completion_tokens,
    reasoning_tokens, cached_tokens, cost_micro`;
  if (firstDay >= lastDay)
    return Prisma.sql`SELECT ${cols} FROM usage_operator_hourly WHERE hour >= ${from} AND hour < ${to}`;
  return Prisma.sql`
    SELECT ${cols} FROM usage_operator_daily WHERE day >= ${firstDay} AND day < ${lastDay}
    UNION ALL SELECT ${cols} FROM usage_operator_hourly WHERE hour >= ${from} AND hour < ${firstDay}
    UNION ALL SELECT ${cols} FROM usage_operator_hourly WHERE hour >= ${lastDay} AND hour < ${to}`;
}

/**
 * By customer, model and upstream, in one pass over the operators' rollups (operatorSource). Hours are whole: an
 * hour counts when it starts in [from, to), as the console asks for whole days up to now.
 */
export async function operatorUsage(ctx: ServiceContext, from: Date, to: Date) {
  checkSpan(from, to);
  const rows = await ctx.prisma.$queryRaw<(Row & { dim: number })[]>(Prisma.sql`
    WITH g AS (
      SELECT GROUPING(h.account_id, h.model, h.upstream)::int AS dim, h.account_id, h.model, h.upstream,
             SUM(h.requests)::bigint AS requests, SUM(h.errors)::bigint AS errors,
             SUM(h.prompt_tokens)::bigint AS prompt, SUM(h.completion_tokens)::bigint AS completion,
             SUM(h.reasoning_tokens)::bigint AS reasoning, SUM(h.cached_tokens)::bigint AS cached,
             SUM(h.cost_micro)::bigint AS cost
      FROM (${operatorSource(from, to)}) h
      GROUP BY GROUPING SETS ((h.account_id), (h.model), (h.upstream))
    )
    SELECT g.dim, COALESCE(g.account_id::text, g.model, g.upstream) AS key,
           CASE WHEN g.dim = ${ACCOUNT} THEN a.name END AS label,
           g.requests, g.errors, g.prompt, g.completion, g.reasoning, g.cached, g.cost
    FROM g LEFT JOIN accounts a ON g.dim = ${ACCOUNT} AND a.id = g.account_id`);
  // the largest 200 of each: by cost for customers and models, by calls for upstreams (as the console lists them)
  const top = (dim: number, byRequests: boolean) =>
    rows
      .filter((r) => r.dim === dim)
      .map(toTotals)
      .sort((x, y) => {
        const [p, q] = byRequests ? [x.requests, y.requests] : [x.costMicro, y.costMicro];
        if (p !== q) return p > q ? -1 : 1;
        if (x.requests !== y.requests) return x.requests > y.requests ? -1 : 1;
        return x.key < y.key ? -1 : x.key > y.key ? 1 : 0;
      })
      .slice(0, 200);
  return { byAccount: top(ACCOUNT, false), byModel: top(MODEL, false), byUpstream: top(UPSTREAM, true) };
}
// GROUPING's bits (account, model, upstream): a set groups by the one whose bit is 0
const ACCOUNT = 0b011;
const MODEL = 0b101;
const UPSTREAM = 0b110;

export interface UpstreamHealth {
  id: string;
  name: string;
  enabled: boolean;
  /** closed, open or half-open; null where this process cannot see the data planes' breakers */
  breaker: string | null;
  requests: number;
  errors: number;
  latencyAvgMs: number | null;
  latencyP95Ms: number | null;
  ttftAvgMs: number | null;
  ttftP95Ms: number | null;
  lastCallAt: Date | null;
}

/** Every upstream with its breaker state (where visible) and its calls of the last `minutes`. */
export async function upstreamHealth(
  ctx: ServiceContext,
  breakers: (() => Record<string, string> | Promise<Record<string, string>>) | undefined,
  minutes: number,
): Promise<UpstreamHealth[]> {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60)
    throw badInput("minutes must be 1..1440", "minutes");
  const since = new Date(Date.now() - minutes * 60_000);
  const [upstreams, stats] = await Promise.all([
    ctx.prisma.upstream.findMany({ orderBy: { name: "asc" } }),
    ctx.prisma.$queryRaw<
      {
        upstream: string;
        requests: bigint;
        errors: bigint;
        lat_avg: number | null;
        lat_p95: number | null;
        ttft_avg: number | null;
        ttft_p95: number | null;
        last: Date | null;
      }[]
    >(Prisma.sql`
      SELECT u.upstream, COUNT(*)::bigint AS requests, COUNT(*) FILTER (WHERE u.status < 200 OR u.status >= 300)::bigint AS errors,
             AVG(u.latency_ms)::float8 AS lat_avg, percentile_cont(0.95) WITHIN GROUP (ORDER BY u.latency_ms)::float8 AS lat_p95,
             AVG(u.ttft_ms)::float8 AS ttft_avg, percentile_cont(0.95) WITHIN GROUP (ORDER BY u.ttft_ms)::float8 AS ttft_p95,
             MAX(u.started_at) AS last
      FROM usage_logs u WHERE u.started_at >= ${since} AND u.upstream IS NOT NULL GROUP BY u.upstream`),
  ]);
  const states = breakers ? await breakers() : null;
  const byName = new Map(stats.map((s) => [s.upstream, s]));
  const round = (v: number | null) => (v === null ? null : Math.round(v));
  return upstreams.map((u) => {
    const s = byName.get(u.name);
    return {
      id: u.id,
      name: u.name,
      enabled: u.enabled,
      breaker: states ? (states[u.name] ?? "closed") : null,
      requests: Number(s?.requests ?? 0),
      errors: Number(s?.errors ?? 0),
      latencyAvgMs: round(s?.lat_avg ?? null),
      latencyP95Ms: round(s?.lat_p95 ?? null),
      ttftAvgMs: round(s?.ttft_avg ?? null),
      ttftP95Ms: round(s?.ttft_p95 ?? null),
      lastCallAt: s?.last ?? null,
    };
  });
}
