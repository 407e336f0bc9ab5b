// Retries of one upstream call before the first byte has gone to the client: exponential backoff with full
// jitter (a random delay in [0, min(max, base × 2^(n−1))], which spreads a thundering herd best), at most
// maxAttempts tries, and only for failures a retry can cure: connection failures, 429 and 5xx.

import type { AbortLike } from "./call-abort.ts";

export interface RetryPolicy {
  /** tries in all, the first included; default 3 */
  maxAttempts: number;
  /** default 100 ms */
  baseDelayMs: number;
  /** cap on one delay, also on an upstream's Retry-After; default 2000 ms */
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = Object.freeze({ maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2000 });

// Errors from Node's net/dns layer and undici that mean the request never reached the upstream (or the
// connection broke before an answer), so sending it again is safe and may well work.
const CONNECT_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/** True for a connection-level failure (the code may sit on the error or on its cause, as undici nests it). */
export function isConnectError(err: unknown): boolean {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && CONNECT_ERROR_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** An upstream HTTP status worth retrying: 429 and every 5xx (Anthropic's 529 overloaded included). */
export const isRetryableStatus = (status: number): boolean => status === 429 || (status >= 500 && status <= 599);

/** The delay before try number `attempt + 1` (attempt ≥ 1 is the try that just failed). */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * An upstream's Retry-After (seconds or an HTTP date) or retry-after-ms, in milliseconds; null when absent or
 * unreadable. The caller caps it: waiting longer than maxDelayMs is better left to the client.
 */
export function parseRetryAfter(headers: Record<string, string | string[] | undefined>, now: number): number | null {
  const ms = first(headers["retry-after-ms"]);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = first(headers["retry-after"]);
  if (value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const date = Date.parse(v);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export type AttemptResult<T> =
  { ok: true; value: T } | { ok: false; retryable: boolean; failure: unknown; retryAfterMs?: number | null };

export interface RetryDeps {
  sleep?: (ms: number, signal?: AbortLike) => Promise<void>;
  random?: () => number;
  /** the client's abort: no further tries once it fires */
  signal?: AbortLike;
  /** the retry budget (key-pool/retry-budget.ts): false when retries are already their share of the traffic */
  mayRetry?: () => boolean;
}

export type RetryOutcome<T> =
  { ok: true; value: T; attempts: number } | { ok: false; failure: unknown; attempts: number };

/**
 * Runs attempt(1), attempt(2), … until one succeeds, a failure is not retryable, maxAttempts is reached or
 * the signal aborts. The wait is the larger of the jittered backoff and the upstream's Retry-After, capped
 * at maxDelayMs. Returns the last failure rather than throwing, so the caller can fail over to the next route.
 */
export async function withRetry<T>(
  attempt: (n: number) => Promise<AttemptResult<T>>,
  policy: RetryPolicy = defaultRetryPolicy,
  deps: RetryDeps = {},
): Promise<RetryOutcome<T>> {
  const sleep = deps.sleep ?? defaultSleep;
  const random = deps.random ?? Math.random;
  for (let n = 1; ; n++) {
    const r = await attempt(n);
    if (r.ok) return { ok: true, value: r.value, attempts: n };
    if (!r.retryable || n >= policy.maxAttempts || deps.signal?.aborted || deps.mayRetry?.() === false) {
      return { ok: false, failure: r.failure, attempts: n };
    }
    const wait = Math.min(policy.maxDelayMs, Math.max(backoffMs(n, policy, random), r.retryAfterMs ?? 0));
    try {
      await sleep(wait, deps.signal);
    } catch {
      return { ok: false, failure: r.failure, attempts: n };
    }
    if (deps.signal?.aborted) return { ok: false, failure: r.failure, attempts: n };
  }
}

function defaultSleep(ms: number, signal?: AbortLike): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
