import { describe, expect, it } from "vitest";
import { rateLimiterContract } from "./limiter.suite.ts";
import { MemoryRateLimiter } from "./memory.ts";
import { formatReset, rateLimitError, rateLimitHeaders } from "./headers.ts";

rateLimiterContract("memory", async () => {
  const limiter = new MemoryRateLimiter();
  return { limiter, cleanup: () => limiter.close() };
});

describe("MemoryRateLimiter", () => {
  const none = { rpm: null, tpm: null, concurrency: null };

  it("answers synchronously", () => {
    const r = new MemoryRateLimiter().acquire({
      keyId: "k",
      accountId: "a",
      keyLimits: { ...none, rpm: 1 },
      accountLimits: none,
      estimatedTokens: 0,
      now: 0,
    });
    expect(r instanceof Promise).toBe(false);
    expect(r.ok).toBe(true);
  });

  it("sweeps idle state but keeps scopes with calls in flight", () => {
    const limiter = new MemoryRateLimiter();
    const base = { accountLimits: none, estimatedTokens: 0, now: 0 };
    const done = limiter.acquire({ ...base, keyId: "k1", accountId: "a1", keyLimits: { ...none, rpm: 60 } });
    if (done.ok) done.release(0, 0);
    const held = limiter.acquire({ ...base, keyId: "k2", accountId: "a2", keyLimits: { ...none, concurrency: 1 } });
    expect(limiter.size).toBe(4);
    // a1 is idle; k1's bucket refills at 1000; k2 and a2 have a call in flight
    limiter.sweep(999);
    expect(limiter.size).toBe(3);
    limiter.sweep(1000);
    expect(limiter.size).toBe(2);
    if (held.ok) held.release(0, 1000);
    limiter.sweep(1000);
    expect(limiter.size).toBe(0);
  });
});

describe("rate limit headers", () => {
  it("formats resets the way OpenAI does", () => {
    expect([0, 250, 1000, 1500].map(formatReset)).toEqual(["0ms", "250ms", "1s", "1.5s"]);
    expect([60_000, 360_000, 3_723_000].map(formatReset)).toEqual(["1m0s", "6m0s", "1h2m3s"]);
  });

  it("writes the tighter limits and Retry-After on a refusal", () => {
    const info = {
      requests: { limit: 60, remaining: 0, resetMs: 1000 },
      tokens: { limit: 1000, remaining: 400, resetMs: 36_000 },
    };
    expect(
      rateLimitHeaders(info, {
        ok: false,
        retryAfterMs: 1001,
        limit: 60,
        remaining: 0,
        scope: "key",
        kind: "rpm",
        info,
      }),
    ).toEqual({
      "x-ratelimit-limit-requests": "60",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "400",
      "x-ratelimit-reset-tokens": "36s",
      "retry-after": "2",
      "retry-after-ms": "1001",
    });
    expect(rateLimitHeaders({ requests: null, tokens: null })).toEqual({});
  });

  it("turns a refusal into a 429 rate_limit_exceeded with the headers", () => {
    const err = rateLimitError({
      ok: false,
      retryAfterMs: 1500,
      limit: 3,
      remaining: 0,
      scope: "account",
      kind: "rpm",
      info: { requests: { limit: 3, remaining: 0, resetMs: 60_000 }, tokens: null },
    });
    expect([err.status, err.kind, err.code, err.message]).toEqual([
      429,
      "rate_limit",
      "rate_limit_exceeded",
      "Rate limit reached for this account: 3 requests per minute. Retry after 1.5s.",
    ]);
    expect(err.headers).toEqual({
      "x-ratelimit-limit-requests": "3",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1m0s",
      "retry-after": "2",
      "retry-after-ms": "1500",
    });
  });
});
