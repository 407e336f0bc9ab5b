import { z } from "zod";

export const clientProtocolSchema = z.enum(["openai", "anthropic", "gemini", "openai-responses"]);
export type ClientProtocol = z.infer<typeof clientProtocolSchema>;

/** Unit prices the call was billed at: micro-units per one million tokens, exact decimal text (quarters). */
const unitPrice = z.string().regex(/^-?\d+(\.\d{1,2})?$/);
export const unitPricesSchema = z.object({
  input: unitPrice,
  cachedInput: unitPrice,
  cacheWrite5m: unitPrice,
  cacheWrite1h: unitPrice,
  output: unitPrice,
});

/**
 * A call's cost: integer micro-units, never negative, at most 18 digits (it must fit Postgres' bigint). The
 * usage stream is an input from outside the control plane: a negative cost settled as a credit (one XADD of
 * "-1000000000" raised a balance by 1,000 units), and a cost past bigint failed its batch on every retry.
 */
export const USAGE_COST = /^\d{1,18}$/;
const usageCost = z.string().regex(USAGE_COST, "a non-negative integer of micro-units (at most 18 digits)");

/** Bounds on cost-attribution data, so a client cannot grow the usage log without limit. */
export const ATTRIBUTION_LIMITS = { tags: 16, tagChars: 128, endUserChars: 256 } as const;
/** Bounds of a usage event's dropped list (client parameter names a translation left out; see translation.ts). */
export const DROPPED_LIMITS = { names: 32, nameChars: 128 } as const;

// One event per call that reached the routing stage; the control plane settles it idempotently by requestId.
// The fields after `startedAt` were added later and default, so events from older replicas still settle.
export const usageEventSchema = z.object({
  requestId: z.string().min(1),
  keyId: z.string(),
  accountId: z.string(),
  model: z.string(),
  protocol: clientProtocolSchema,
  upstream: z.string().nullable(),
  stream: z.boolean(),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  reasoningTokens: z.number().int().nonnegative(),
  cachedTokens: z.number().int().nonnegative(),
  cost: usageCost,
  status: z.number().int(),
  errorCode: z.string().nullable(),
  latencyMs: z.number().int().nonnegative(),
  ttftMs: z.number().int().nonnegative().nullable(),
  clientIp: z.string().nullable(),
  startedAt: z.string(),
  /** parts of promptTokens written to a prompt cache, by lifetime */
  cacheWrite5mTokens: z.number().int().nonnegative().default(0),
  cacheWrite1hTokens: z.number().int().nonnegative().default(0),
  /** the prices the call was billed at; null when it was not billed (refused, failed) */
  prices: unitPricesSchema.nullable().default(null),
  /**
   * The upstream never reported usage (a stream cut short): the tokens are the gateway's estimate. A later
   * event for the same request with estimated=false (the upstream finished after the client left) replaces it.
   */
  estimated: z.boolean().default(false),
  /** cost attribution: the caller's end user and tags ("key=value" or a bare word) */
  endUser: z.string().max(ATTRIBUTION_LIMITS.endUserChars).nullable().default(null),
  tags: z.array(z.string().max(ATTRIBUTION_LIMITS.tagChars)).max(ATTRIBUTION_LIMITS.tags).default([]),
  /** client parameters a translation left out (hints, tools the upstream cannot run): x-modelgate-dropped */
  dropped: z.array(z.string().max(DROPPED_LIMITS.nameChars)).max(DROPPED_LIMITS.names).optional(),
  /**
   * The request may have a usage row already: a resend (a spool replayed, entries sent again to a Redis that
   * restarted), or the exact count that follows an estimate. Settlement inserts such an event with a check for
   * the row; the others go in bulk (usage/settle.ts in the control plane). Only a hint for speed: a row found
   * where none was expected still settles once.
   */
  maybeSettled: z.boolean().optional(),
});
export type UsageEvent = z.infer<typeof usageEventSchema>;
export type UnitPrices = z.infer<typeof unitPricesSchema>;

// The control plane validates every event it settles (each data plane's, from JSON), which through zod cost
// ~6–10 µs of CPU an event. readUsageEvent checks the usual event with plain comparisons first, accepting
// only what the schema accepts and answering what it answers (a property test holds the two together); an
// event it does not take that way (a missing optional field is fine, anything unusual is not) goes to the schema.
const PROTOCOLS: ReadonlySet<unknown> = new Set(clientProtocolSchema.options);
const UNIT_PRICE = /^-?\d+(\.\d{1,2})?$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isPrice = (v: unknown): v is string => typeof v === "string" && UNIT_PRICE.test(v);

/** The event when it is valid as the usual plain checks see it; undefined: ask the schema. */
export function plainUsageEvent(raw: unknown): UsageEvent | undefined {
  if (!isObject(raw)) return undefined;
  const {
    requestId,
    keyId,
    accountId,
    model,
    protocol,
    upstream,
    stream,
    promptTokens,
    completionTokens,
    reasoningTokens,
    cachedTokens,
    cost,
    status,
    errorCode,
    latencyMs,
    ttftMs,
    clientIp,
    startedAt,
    cacheWrite5mTokens = 0,
    cacheWrite1hTokens = 0,
    prices = null,
    estimated = false,
    endUser = null,
    tags = [],
    dropped,
    maybeSettled,
  } = raw;
  if (
    typeof requestId !== "string" ||
    requestId.length === 0 ||
    typeof keyId !== "string" ||
    typeof accountId !== "string" ||
    typeof model !== "string" ||
    !PROTOCOLS.has(protocol) ||
    (upstream !== null && typeof upstream !== "string") ||
    typeof stream !== "boolean" ||
    !isCount(promptTokens) ||
    !isCount(completionTokens) ||
    !isCount(reasoningTokens) ||
    !isCount(cachedTokens) ||
    typeof cost !== "string" ||
    !USAGE_COST.test(cost) ||
    typeof status !== "number" ||
    !Number.isSafeInteger(status) ||
    (errorCode !== null && typeof errorCode !== "string") ||
    !isCount(latencyMs) ||
    (ttftMs !== null && !isCount(ttftMs)) ||
    (clientIp !== null && typeof clientIp !== "string") ||
    typeof startedAt !== "string" ||
    !isCount(cacheWrite5mTokens) ||
    !isCount(cacheWrite1hTokens) ||
    typeof estimated !== "boolean" ||
    (endUser !== null && (typeof endUser !== "string" || endUser.length > ATTRIBUTION_LIMITS.endUserChars)) ||
    !Array.isArray(tags) ||
    tags.length > ATTRIBUTION_LIMITS.tags ||
    (dropped !== undefined && (!Array.isArray(dropped) || dropped.length > DROPPED_LIMITS.names)) ||
    (maybeSettled !== undefined && typeof maybeSettled !== "boolean")
  )
    return undefined;
  for (const t of tags as unknown[])
    if (typeof t !== "string" || t.length > ATTRIBUTION_LIMITS.tagChars) return undefined;
  for (const d of (dropped ?? []) as unknown[])
    if (typeof d !== "string" || d.length > DROPPED_LIMITS.nameChars) return undefined;
  let unitPrices: UnitPrices | null = null;
  if (prices !== null) {
    if (!isObject(prices)) return undefined;
    const { input, cachedInput, cacheWrite5m, cacheWrite1h, output } = prices;
    if (
      !isPrice(input) ||
      !isPrice(cachedInput) ||
      !isPrice(cacheWrite5m) ||
      !isPrice(cacheWrite1h) ||
      !isPrice(output)
    )
      return undefined;
    unitPrices = { input, cachedInput, cacheWrite5m, cacheWrite1h, output };
  }
  return {
    requestId,
    keyId,
    accountId,
    model,
    protocol: protocol as UsageEvent["protocol"],
    upstream,
    stream,
    promptTokens,
    completionTokens,
    reasoningTokens,
    cachedTokens,
    cost,
    status,
    errorCode,
    latencyMs,
    ttftMs,
    clientIp,
    startedAt,
    cacheWrite5mTokens,
    cacheWrite1hTokens,
    prices: unitPrices,
    estimated,
    endUser,
    tags: tags as string[],
    // present when the entry has the key, as the schema's output has it (undefined included)
    ...(Object.hasOwn(raw, "dropped") ? { dropped: dropped as string[] } : {}),
    ...(Object.hasOwn(raw, "maybeSettled") ? { maybeSettled: maybeSettled as boolean | undefined } : {}),
  };
}

/** A usage event from outside (JSON): what usageEventSchema.safeParse answers, usually without running it. */
export function readUsageEvent(raw: unknown): ReturnType<typeof usageEventSchema.safeParse> {
  const data = plainUsageEvent(raw);
  return data !== undefined ? { success: true, data } : usageEventSchema.safeParse(raw);
}

/**
 * A usage-stream entry holds the events one replica finished in one event-loop turn: the field
 * `events` is their JSON array (one XADD per turn instead of one per call). The control plane also reads
 * the older one-event form, field `event`, so replicas can be upgraded one at a time.
 */
export const USAGE_ENTRY_FIELD = "events";
export const LEGACY_USAGE_ENTRY_FIELD = "event";

/** The raw events of one stream entry's fields (not yet validated); null when the entry is not readable. */
export function usageEntryEvents(fields: readonly string[]): unknown[] | null {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i];
    if (name !== USAGE_ENTRY_FIELD && name !== LEGACY_USAGE_ENTRY_FIELD) continue;
    let value: unknown;
    try {
      value = JSON.parse(fields[i + 1]!);
    } catch {
      return null;
    }
    if (name === LEGACY_USAGE_ENTRY_FIELD) return [value];
    return Array.isArray(value) ? value : null;
  }
  return null;
}
