import type { RateLimits } from "../contract/snapshot.ts";

export type LimitScope = "key" | "account";
export type LimitKind = "rpm" | "tpm" | "concurrency";

export interface RateLimitRequest {
  keyId: string;
  accountId: string;
  keyLimits: RateLimits;
  accountLimits: RateLimits;
  /** tokens the call is expected to use (prompt estimate + max output); corrected by release() */
  estimatedTokens: number;
  /** epoch milliseconds */
  now: number;
}

/** One limit's state for the x-ratelimit-* headers. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** milliseconds until the limit is fully replenished */
  resetMs: number;
}

/** For each of requests and tokens, the tighter of the key's and the account's limits (null: neither set). */
export interface RateLimitInfo {
  requests: LimitState | null;
  tokens: LimitState | null;
}

export interface RateLimitGrant {
  ok: true;
  info: RateLimitInfo;
  /**
   * Ends the call: frees its concurrency slot and corrects the token charge to the actual count. Idempotent;
   * call it exactly when the call ends (success, error or client abort). Never throws: a failure to reach a
   * shared store is logged by the implementation and the lease expires on its own. now defaults to the clock.
   */
  release(actualTokens: number, now?: number): void | Promise<void>;
  /**
   * Ends a call that never reached an upstream (refused after the limits were taken): gives back all it
   * took, its request, its tokens and its slot, so a refused call costs the caller no budget. Idempotent
   * together with release(): whichever comes first counts.
   */
  cancel(now?: number): void | Promise<void>;
  /**
   * Raises the call's token estimate to `estimatedTokens` once it is known to be larger (a Responses call whose
   * previous_response_id expands to the stored conversation): takes only the difference from the tpm limits,
   * atomically, leaving the call's request and concurrency slot as they are (it already counts once for those).
   * Refused (the difference does not fit the key's or the account's tpm), nothing changes and the answer is a
   * tpm refusal as acquire would give (retryAfterMs: the wait until the difference fits, which is the wait for
   * the whole new estimate once this call's take is given back); the grant stays held, and what becomes of the
   * call is the caller's (see topUpLimits). Granted, release() and cancel() settle against the new estimate.
   * An estimate not above the current one, or a grant already ended, changes nothing and is granted.
   */
  topUp(estimatedTokens: number, now?: number): TopUpResult | Promise<TopUpResult>;
}

/** A granted top-up: the call's header info after it. */
export interface TopUpGrant {
  ok: true;
  info: RateLimitInfo;
}

export type TopUpResult = TopUpGrant | RateLimitDenial;

export interface RateLimitDenial {
  ok: false;
  retryAfterMs: number;
  limit: number;
  remaining: number;
  scope: LimitScope;
  kind: LimitKind;
  info: RateLimitInfo;
}

export type AcquireResult = RateLimitGrant | RateLimitDenial;

export interface RateLimiter {
  /** Checks and takes rpm, tpm and concurrency of the key and its account together: all or nothing. */
  acquire(req: RateLimitRequest): AcquireResult | Promise<AcquireResult>;
  close(): Promise<void>;
}

export const NO_INFO: RateLimitInfo = Object.freeze({ requests: null, tokens: null });

/** The grant of a call with no limit set anywhere: nothing was taken, so nothing is given back or topped up. */
export const UNLIMITED_GRANT: RateLimitGrant = Object.freeze({
  ok: true as const,
  info: NO_INFO,
  release() {},
  cancel() {},
  topUp: () => ({ ok: true as const, info: NO_INFO }),
});

export const hasAnyLimit = (l: RateLimits): boolean => l.rpm !== null || l.tpm !== null || l.concurrency !== null;

export const sameRateLimits = (a: RateLimits, b: RateLimits): boolean =>
  a === b || (a.rpm === b.rpm && a.tpm === b.tpm && a.concurrency === b.concurrency);

/** The limit to report in headers: the one with fewer remaining, then the smaller one (null: neither set). */
export function tighterLimit(
  keyLimit: number | null,
  keyRemaining: number,
  keyResetMs: number,
  accountLimit: number | null,
  accountRemaining: number,
  accountResetMs: number,
): LimitState | null {
  if (accountLimit === null) {
    return keyLimit === null ? null : { limit: keyLimit, remaining: keyRemaining, resetMs: keyResetMs };
  }
  if (
    keyLimit !== null &&
    (keyRemaining < accountRemaining || (keyRemaining === accountRemaining && keyLimit <= accountLimit))
  ) {
    return { limit: keyLimit, remaining: keyRemaining, resetMs: keyResetMs };
  }
  return { limit: accountLimit, remaining: accountRemaining, resetMs: accountResetMs };
}
