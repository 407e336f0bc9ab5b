import { z } from "zod";
import { microString } from "./snapshot.ts";

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

/** Bounds on cost-attribution data, so a client cannot grow the usage log without limit. */
export const ATTRIBUTION_LIMITS = { tags: 16, tagChars: 128, endUserChars: 256 } as const;

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
  cost: microString,
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
});
export type UsageEvent = z.infer<typeof usageEventSchema>;
export type UnitPrices = z.infer<typeof unitPricesSchema>;

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
