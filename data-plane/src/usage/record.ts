import { computeCost, tokenBreakdown, unitPrices } from "../billing/cost.ts";
import type { ClientProtocol, Price, UsageEvent } from "../contract/index.ts";
import { DROPPED_LIMITS } from "../contract/usage.ts";

/** The canonical counts (protocols/canonical.ts, Usage): prompt includes cache reads and writes. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
}

export const zeroUsage = (): TokenUsage => ({
  promptTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  cachedTokens: 0,
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
});

/** Who a call is attributed to, beyond its key: the caller's end user and tags. */
export interface Attribution {
  endUser: string | null;
  tags: string[];
}

export interface CallRecord {
  requestId: string;
  keyId: string;
  accountId: string;
  model: string;
  protocol: ClientProtocol;
  upstream: string | null;
  stream: boolean;
  clientIp: string | null;
  startedAt: number;
  firstByteAt: number | null;
  attribution?: Attribution;
  /** client parameters the translation left out (x-modelgate-dropped), by the client's names */
  dropped?: string[];
}

export function usageEvent(
  call: CallRecord,
  usage: TokenUsage,
  price: Price | null,
  status: number,
  errorCode: string | null,
  /** defaults to "the call succeeded"; a stream cut off after delivering tokens is charged for them */
  charge = status >= 200 && status < 300,
  /** the counts are the gateway's estimate, not the upstream's report */
  estimated = false,
): UsageEvent {
  const now = Date.now();
  // The breakdown is stored as billed: clamped counts, so the row's classes always add up to its prompt.
  const b = tokenBreakdown(usage);
  const billed = charge && price !== null;
  return {
    requestId: call.requestId,
    keyId: call.keyId,
    accountId: call.accountId,
    model: call.model,
    protocol: call.protocol,
    upstream: call.upstream,
    stream: call.stream,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    reasoningTokens: usage.reasoningTokens,
    cachedTokens: b.cacheRead,
    cacheWrite5mTokens: b.cacheWrite5m,
    cacheWrite1hTokens: b.cacheWrite1h,
    // Failed upstream calls are never charged; a successful one always is, at the price of its tokens. Never
    // below 0: a usage event is a charge, and a negative one would credit the wallet (a rebate price, or counts
    // an upstream got wrong, are not the client's to cash in).
    cost: billed ? nonNegative(computeCost(usage, price)).toString() : "0",
    prices: billed ? unitPrices(price) : null,
    estimated,
    endUser: call.attribution?.endUser ?? null,
    tags: call.attribution?.tags ?? [],
    // Cut to the event's bounds: the header names them all, the usage row the first DROPPED_LIMITS.names.
    ...(call.dropped
      ? { dropped: call.dropped.slice(0, DROPPED_LIMITS.names).map((d) => d.slice(0, DROPPED_LIMITS.nameChars)) }
      : {}),
    status,
    errorCode,
    latencyMs: now - call.startedAt,
    ttftMs: call.firstByteAt === null ? null : call.firstByteAt - call.startedAt,
    clientIp: call.clientIp,
    startedAt: new Date(call.startedAt).toISOString(),
  };
}

const nonNegative = (cost: bigint): bigint => (cost < 0n ? 0n : cost);

/**
 * The gateway's one token estimate: four characters a token, rounded up. Used where no tokenizer's count exists:
 * a request's prompt before admission, count_tokens, and an answer whose upstream reported no usage (or a
 * stream cut short), counted from what was delivered.
 */
export const tokensFromChars = (chars: number): number => Math.ceil(chars / 4);
