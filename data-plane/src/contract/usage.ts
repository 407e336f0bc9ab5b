import { z } from "zod";
import { microString } from "./snapshot.ts";

export const clientProtocolSchema = z.enum(["openai", "anthropic", "gemini"]);
export type ClientProtocol = z.infer<typeof clientProtocolSchema>;

// One event per call that reached the routing stage; the control plane settles it idempotently by requestId.
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
});
export type UsageEvent = z.infer<typeof usageEventSchema>;

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
