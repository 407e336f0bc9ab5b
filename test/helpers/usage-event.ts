import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";

/** A complete usage event numbered n (request id `req-<n>`, n prompt tokens, cost 10·n micro). */
export const usageEvent = (n: number): UsageEvent => ({
  requestId: `req-${n}`,
  keyId: "k1",
  accountId: "a1",
  model: "acme-chat-2025-01-01",
  protocol: "openai",
  upstream: "mock",
  stream: false,
  promptTokens: n,
  completionTokens: 1,
  reasoningTokens: 0,
  cachedTokens: 0,
  cost: String(n * 10),
  status: 200,
  errorCode: null,
  latencyMs: 5,
  ttftMs: null,
  clientIp: "203.0.113.1",
  startedAt: "2025-01-01T00:00:00.000Z",
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
  prices: null,
  estimated: false,
  endUser: null,
  tags: [],
});
