import type { UsageLog } from "../../generated/prisma/client.ts";
import { usageByAttribution, usageStats, type StatsFilter, type Totals } from "../../stats/aggregate.ts";
import { usagePage, type UsageFilter } from "../../stats/usage-log.ts";
import { builder } from "../builder.ts";
import { formatMicroText } from "../../services/money.ts";
import { accountIdFor, checkId, clampFirst, money } from "../common.ts";
import { GranularityEnum } from "./enums.ts";

export const UsageFilterInput = builder.inputType("UsageFilter", {
  fields: (t) => ({
    from: t.field({ type: "DateTime", description: "inclusive" }),
    to: t.field({ type: "DateTime", description: "exclusive" }),
    apiKeyId: t.id(),
    model: t.string(),
    status: t.int({ description: "exact HTTP status" }),
    success: t.boolean({ description: "true: 2xx only; false: failures only" }),
    endUser: t.string({ description: "cost attribution: the end user (OpenAI user, Anthropic metadata.user_id)" }),
    tag: t.string({ description: "cost attribution: calls carrying this tag, e.g. team=search" }),
  }),
});

export function toFilter(
  f:
    | {
        from?: Date | null;
        to?: Date | null;
        apiKeyId?: string | number | null;
        model?: string | null;
        status?: number | null;
        success?: boolean | null;
        endUser?: string | null;
        tag?: string | null;
      }
    | null
    | undefined,
): UsageFilter {
  if (!f) return {};
  return {
    from: f.from ?? null,
    to: f.to ?? null,
    apiKeyId: f.apiKeyId === null || f.apiKeyId === undefined ? null : checkId(String(f.apiKeyId), "API key"),
    model: f.model ?? null,
    status: f.status ?? null,
    success: f.success ?? null,
    endUser: f.endUser ?? null,
    tag: f.tag ?? null,
  };
}

const UsagePricesRef = builder.objectRef<UsageLog>("UsagePrices").implement({
  description:
    "The unit prices a call was billed at, per 1M tokens (decimal text; derived cache-write prices can have more than 6 decimals).",
  fields: (t) => {
    const price = (get: (u: UsageLog) => { toString(): string } | null) =>
      t.string({ resolve: (u) => formatMicroText(get(u)?.toString() ?? "0") });
    return {
      input: price((u) => u.inputPrice),
      cachedInput: price((u) => u.cachedInputPrice),
      cacheWrite5m: price((u) => u.cacheWrite5mPrice),
      cacheWrite1h: price((u) => u.cacheWrite1hPrice),
      output: price((u) => u.outputPrice),
    };
  },
});

const UsageEntryRef = builder.objectRef<UsageLog>("UsageEntry").implement({
  description: "One call: metadata only (no prompt or completion text is kept).",
  fields: (t) => ({
    id: t.exposeID("id"),
    requestId: t.exposeString("requestId"),
    startedAt: t.expose("startedAt", { type: "DateTime" }),
    apiKeyId: t.exposeID("apiKeyId", { nullable: true }),
    model: t.exposeString("model"),
    protocol: t.exposeString("protocol"),
    status: t.exposeInt("status"),
    errorCode: t.exposeString("errorCode", { nullable: true }),
    promptTokens: t.exposeInt("promptTokens"),
    completionTokens: t.exposeInt("completionTokens"),
    reasoningTokens: t.exposeInt("reasoningTokens"),
    cachedTokens: t.exposeInt("cachedTokens", {
      description: "input tokens read from a prompt cache (part of promptTokens)",
    }),
    inputTokens: t.exposeInt("inputTokens", {
      description: "input tokens neither read from nor written to a cache (part of promptTokens)",
    }),
    cacheWrite5mTokens: t.exposeInt("cacheWrite5mTokens", {
      description: "input tokens written to a 5-minute prompt cache (part of promptTokens)",
    }),
    cacheWrite1hTokens: t.exposeInt("cacheWrite1hTokens", {
      description: "input tokens written to a 1-hour prompt cache (part of promptTokens)",
    }),
    totalTokens: t.int({ resolve: (u) => u.promptTokens + u.completionTokens }),
    amount: t.string({ resolve: (u) => money(u.costMicro) }),
    amountMicro: t.string({ resolve: (u) => u.costMicro.toString() }),
    prices: t.field({
      type: UsagePricesRef,
      nullable: true,
      description: "null when the call was not billed",
      resolve: (u) => (u.inputPrice === null ? null : u),
    }),
    estimated: t.exposeBoolean("estimated", {
      description: "the counts are the gateway's estimate (a stream cut before the upstream reported usage)",
    }),
    endUser: t.exposeString("endUser", { nullable: true, description: "OpenAI user, Anthropic metadata.user_id" }),
    tags: t.exposeStringList("tags", {
      description: "x-modelgate-tags, OpenAI metadata and Gemini labels as key=value",
    }),
    dropped: t.exposeStringList("dropped", {
      description:
        "client parameters a translation to another protocol left out (hints with no equivalent, tools the upstream cannot run), as the answer's x-modelgate-dropped header named them",
    }),
    latencyMs: t.exposeInt("latencyMs"),
    ttftMs: t.exposeInt("ttftMs", { nullable: true }),
    stream: t.exposeBoolean("stream"),
  }),
});

const UsagePage = builder
  .objectRef<{ nodes: UsageLog[]; hasNextPage: boolean; endCursor: string | null }>("UsagePage")
  .implement({
    fields: (t) => ({
      nodes: t.field({ type: [UsageEntryRef], resolve: (p) => p.nodes }),
      hasNextPage: t.exposeBoolean("hasNextPage"),
      endCursor: t.exposeString("endCursor", { nullable: true, description: "pass as `after` for the next page" }),
    }),
  });

// The figures every usage statistic has (a total, a bucket, a model's or a key's share, ...): defined once here and
// inherited by each type that implements the interface, so clients can select them with one fragment.
export const UsageFiguresRef = builder.interfaceRef<Totals>("UsageFigures").implement({
  description: "The figures of a set of calls: counts, tokens and cost.",
  fields: (t) => ({
    requests: t.field({ type: "Long", resolve: (r) => r.requests }),
    errors: t.field({ type: "Long", description: "calls answered with a non-2xx status", resolve: (r) => r.errors }),
    promptTokens: t.field({ type: "Long", resolve: (r) => r.promptTokens }),
    completionTokens: t.field({ type: "Long", resolve: (r) => r.completionTokens }),
    reasoningTokens: t.field({ type: "Long", resolve: (r) => r.reasoningTokens }),
    cachedTokens: t.field({ type: "Long", resolve: (r) => r.cachedTokens }),
    totalTokens: t.field({ type: "Long", resolve: (r) => r.promptTokens + r.completionTokens }),
    amount: t.string({ resolve: (r) => money(r.costMicro) }),
    amountMicro: t.string({ resolve: (r) => r.costMicro.toString() }),
  }),
});
const interfaces = [UsageFiguresRef];

const TotalsRef = builder.objectRef<Totals>("UsageTotals").implement({ interfaces });
const BucketRef = builder.objectRef<Totals & { bucket: Date }>("UsageBucket").implement({
  interfaces,
  fields: (t) => ({
    bucket: t.field({ type: "DateTime", description: "start of the hour or day", resolve: (r) => r.bucket }),
  }),
});
const ByModelRef = builder.objectRef<Totals & { model: string }>("UsageByModel").implement({
  interfaces,
  fields: (t) => ({ model: t.string({ resolve: (r) => r.model }) }),
});
type KeyTotals = Totals & { apiKeyId: string | null; apiKeyName: string | null };
const ByKeyRef = builder.objectRef<KeyTotals>("UsageByKey").implement({
  interfaces,
  fields: (t) => ({
    apiKeyId: t.id({ nullable: true, resolve: (r) => r.apiKeyId }),
    apiKeyName: t.string({ nullable: true, resolve: (r) => r.apiKeyName }),
  }),
});

const ByEndUserRef = builder.objectRef<Totals & { key: string | null }>("UsageByEndUser").implement({
  interfaces,
  fields: (t) => ({
    endUser: t.string({ nullable: true, description: "null: calls without an end user", resolve: (r) => r.key }),
  }),
});
const ByTagRef = builder.objectRef<Totals & { key: string | null }>("UsageByTag").implement({
  interfaces,
  fields: (t) => ({ tag: t.string({ resolve: (r) => r.key ?? "" }) }),
});

type StatsParent = Awaited<ReturnType<typeof usageStats>> & {
  byKeyNamed: KeyTotals[];
  accountId: string;
  filter: StatsFilter;
};

const StatsRef = builder.objectRef<StatsParent>("UsageStats").implement({
  fields: (t) => ({
    total: t.field({ type: TotalsRef, resolve: (s) => s.total }),
    series: t.field({ type: [BucketRef], description: "buckets with no calls are left out", resolve: (s) => s.series }),
    byModel: t.field({ type: [ByModelRef], resolve: (s) => s.byModel }),
    byKey: t.field({ type: [ByKeyRef], resolve: (s) => s.byKeyNamed }),
    byEndUser: t.field({
      type: [ByEndUserRef],
      description:
        "cost attribution: the 100 largest end users by cost (read from the usage log, so slower over long ranges)",
      resolve: (s, _a, ctx) => usageByAttribution(ctx.app, s.accountId, s.filter, "endUser"),
    }),
    byTag: t.field({
      type: [ByTagRef],
      description: "cost attribution: the 100 largest tags by cost; a call with several tags counts under each",
      resolve: (s, _a, ctx) => usageByAttribution(ctx.app, s.accountId, s.filter, "tag"),
    }),
  }),
});

builder.queryFields((t) => ({
  usage: t.field({
    type: UsagePage,
    authScopes: { authenticated: true },
    description: "The usage log, newest first, with cursor pagination.",
    args: {
      accountId: t.arg.id(),
      filter: t.arg({ type: UsageFilterInput }),
      first: t.arg.int(),
      after: t.arg.string(),
    },
    resolve: (_r, args, ctx) =>
      usagePage(
        ctx.app,
        accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read"),
        toFilter(args.filter),
        clampFirst(args.first, 50, 200),
        args.after,
      ),
  }),
  usageStats: t.field({
    type: StatsRef,
    authScopes: { authenticated: true },
    description: "Usage trends by hour or day, by model and by key (default: the last 7 days by day, UTC).",
    args: {
      accountId: t.arg.id(),
      from: t.arg({ type: "DateTime" }),
      to: t.arg({ type: "DateTime" }),
      granularity: t.arg({ type: GranularityEnum, defaultValue: "day" }),
      timeZone: t.arg.string({ defaultValue: "UTC", description: "IANA name; buckets start at local midnight" }),
      apiKeyId: t.arg.id(),
      model: t.arg.string(),
      endUser: t.arg.string({ description: "cost attribution: only this end user's calls" }),
      tag: t.arg.string({ description: "cost attribution: only calls carrying this tag" }),
    },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read");
      const to = args.to ?? new Date();
      const from = args.from ?? new Date(to.getTime() - 7 * 86_400_000);
      const filter: StatsFilter = {
        from,
        to,
        granularity: args.granularity ?? "day",
        timeZone: args.timeZone ?? "UTC",
        apiKeyId: args.apiKeyId ? checkId(String(args.apiKeyId), "API key") : null,
        model: args.model,
        endUser: args.endUser,
        tag: args.tag,
      };
      const stats = await usageStats(ctx.app, accountId, filter);
      const ids = stats.byKey.map((k) => k.apiKeyId).filter((x): x is string => x !== null);
      const names = new Map(
        (
          await ctx.app.prisma.apiKey.findMany({
            where: { id: { in: ids }, accountId },
            select: { id: true, name: true },
          })
        ).map((k) => [k.id, k.name]),
      );
      return {
        ...stats,
        accountId,
        filter,
        byKeyNamed: stats.byKey.map((k) => ({ ...k, apiKeyName: k.apiKeyId ? (names.get(k.apiKeyId) ?? null) : null })),
      };
    },
  }),
}));
