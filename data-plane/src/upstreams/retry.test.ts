import { describe, expect, it } from "vitest";
import {
  backoffMs,
  defaultRetryPolicy,
  isConnectError,
  isRetryableStatus,
  parseRetryAfter,
  withRetry,
  type AttemptResult,
} from "./retry.ts";

const policy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1000 };

describe("retry classification", () => {
  it("retries 429 and 5xx only", () => {
    const statuses = [200, 400, 401, 403, 404, 408, 409, 413, 429, 500, 502, 503, 504, 529, 599, 600];
    expect(statuses.filter(isRetryableStatus)).toEqual([429, 500, 502, 503, 504, 529, 599]);
  });

  it("recognises connection failures, nested as undici does", () => {
    expect(isConnectError(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(
      isConnectError(
        new TypeError("fetch failed", { cause: Object.assign(new Error("t"), { code: "UND_ERR_CONNECT_TIMEOUT" }) }),
      ),
    ).toBe(true);
    expect(isConnectError(Object.assign(new Error("x"), { code: "UND_ERR_HEADERS_TIMEOUT" }))).toBe(false);
    expect(isConnectError(new DOMException("aborted", "AbortError"))).toBe(false);
    expect(isConnectError("ECONNREFUSED")).toBe(false);
    expect(isConnectError(null)).toBe(false);
  });
});

describe("backoffMs", () => {
  it("doubles the ceiling per try up to the cap, with full jitter", () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffMs(n, policy, top))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(backoffMs(3, policy, () => 0)).toBe(0);
    expect(backoffMs(3, policy, () => 0.5)).toBe(200);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");
  it("reads seconds, HTTP dates and retry-after-ms", () => {
    expect(parseRetryAfter({ "retry-after": "3" }, now)).toBe(3000);
    expect(parseRetryAfter({ "retry-after": "Wed, 01 Jan 2025 00:00:05 GMT" }, now)).toBe(5000);
    expect(parseRetryAfter({ "retry-after": "Tue, 31 Dec 2024 00:00:05 GMT" }, now)).toBe(0);
    expect(parseRetryAfter({ "retry-after-ms": "250.5", "retry-after": "9" }, now)).toBe(251);
    expect(parseRetryAfter({ "retry-after": ["2", "7"] }, now)).toBe(2000);
    expect(parseRetryAfter({ "retry-after": "soon" }, now)).toBeNull();
    expect(parseRetryAfter({}, now)).toBeNull();
  });
});

describe("withRetry", () => {
  const recorder = () => {
    const waits: number[] = [];
    return { waits, sleep: async (ms: number) => void waits.push(ms) };
  };
  const script = (results: AttemptResult<string>[]) => {
    const seen: number[] = [];
    return {
      seen,
      attempt: async (n: number) => {
        seen.push(n);
        return results[n - 1]!;
      },
    };
  };
  const retryable = (failure: string, retryAfterMs?: number): AttemptResult<string> => ({
    ok: false,
    retryable: true,
    failure,
    retryAfterMs,
  });

  it("returns the first success, waiting the jittered backoff between tries", async () => {
    const { waits, sleep } = recorder();
    const s = script([retryable("503"), retryable("429"), { ok: true, value: "done" }]);
    const r = await withRetry(s.attempt, policy, { sleep, random: () => 0.5 });
    expect(r).toEqual({ ok: true, value: "done", attempts: 3 });
    expect(s.seen).toEqual([1, 2, 3]);
    expect(waits).toEqual([50, 100]);
  });

  it("stops at maxAttempts with the last failure", async () => {
    const { waits, sleep } = recorder();
    const s = script([retryable("a"), retryable("b"), retryable("c"), retryable("d"), retryable("e")]);
    const r = await withRetry(s.attempt, policy, { sleep, random: () => 0.5 });
    expect(r).toEqual({ ok: false, failure: "d", attempts: 4 });
    expect(waits).toEqual([50, 100, 200]);
  });

  it("does not retry a failure that is not retryable", async () => {
    const { waits, sleep } = recorder();
    const s = script([
      { ok: false, retryable: false, failure: "400" },
      { ok: true, value: "never" },
    ]);
    expect(await withRetry(s.attempt, policy, { sleep })).toEqual({ ok: false, failure: "400", attempts: 1 });
    expect(waits).toEqual([]);
  });

  it("honours the upstream's Retry-After up to the cap", async () => {
    const { waits, sleep } = recorder();
    const s = script([retryable("429", 700), retryable("429", 60_000), { ok: true, value: "ok" }]);
    await withRetry(s.attempt, policy, { sleep, random: () => 0 });
    expect(waits).toEqual([700, 1000]);
  });

  it("stops once the client has gone", async () => {
    const ac = new AbortController();
    const s = script([retryable("a"), retryable("b"), { ok: true, value: "late" }]);
    const r = await withRetry(s.attempt, policy, {
      sleep: async () => ac.abort(),
      random: () => 0,
      signal: ac.signal,
    });
    expect(r).toEqual({ ok: false, failure: "a", attempts: 1 });
  });

  it("sleeps for real by default and aborts the sleep with the signal", async () => {
    const ac = new AbortController();
    const s = script([retryable("a"), { ok: true, value: "late" }]);
    const started = Date.now();
    setTimeout(() => ac.abort(), 20);
    const r = await withRetry(
      s.attempt,
      { ...defaultRetryPolicy, baseDelayMs: 10_000, maxDelayMs: 10_000 },
      {
        random: () => 0.99,
        signal: ac.signal,
      },
    );
    expect(r).toEqual({ ok: false, failure: "a", attempts: 1 });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
