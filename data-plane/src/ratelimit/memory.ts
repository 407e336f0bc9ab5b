import type { RateLimits } from "../contract/snapshot.ts";
import { gcra, chargedUnits, correctTat, type GcraCheck } from "./gcra.ts";
import {
  hasAnyLimit,
  UNLIMITED_GRANT,
  tighterLimit,
  type AcquireResult,
  type LimitKind,
  type LimitScope,
  type LimitState,
  type RateLimitGrant,
  type RateLimiter,
  type RateLimitInfo,
  type RateLimitRequest,
  type TopUpResult,
} from "./types.ts";

interface ScopeState {
  rpmTat: number;
  tpmTat: number;
  /** counted whether or not a concurrency limit is set, so a newly set limit sees the true count at once */
  inflight: number;
}

export interface MemoryRateLimiterOptions {
  /** Retry-After hint when a concurrency limit refuses (no timer tells when a slot frees); default 1000 */
  concurrencyRetryMs?: number;
}

const SWEEP_EVERY = 4096;

const newCheck = (): GcraCheck => ({ allowed: true, newTat: 0, retryAfterMs: 0, remaining: 0, resetMs: 0 });

const tighter = (kLimit: number | null, k: GcraCheck, aLimit: number | null, a: GcraCheck): LimitState | null =>
  tighterLimit(kLimit, k.remaining, k.resetMs, aLimit, a.remaining, a.resetMs);

class MemoryGrant implements RateLimitGrant {
  readonly ok = true as const;
  private released = false;
  constructor(
    public info: RateLimitInfo,
    private readonly key: ScopeState,
    private readonly account: ScopeState,
    private readonly keyTpm: number | null,
    private readonly accountTpm: number | null,
    /** raised by topUp; release() corrects against it */
    private estimatedTokens: number,
    private readonly keyRpm: number | null,
    private readonly accountRpm: number | null,
  ) {}

  cancel(now: number = Date.now()): void {
    if (this.released) return;
    this.release(0, now);
    if (this.keyRpm !== null) this.key.rpmTat = correctTat(this.key.rpmTat, now, this.keyRpm, -1);
    if (this.accountRpm !== null) this.account.rpmTat = correctTat(this.account.rpmTat, now, this.accountRpm, -1);
  }

  release(actualTokens: number, now: number = Date.now()): void {
    if (this.released) return;
    this.released = true;
    this.key.inflight--;
    this.account.inflight--;
    if (this.keyTpm !== null) {
      const delta = actualTokens - chargedUnits(this.keyTpm, this.estimatedTokens);
      this.key.tpmTat = correctTat(this.key.tpmTat, now, this.keyTpm, delta);
    }
    if (this.accountTpm !== null) {
      const delta = actualTokens - chargedUnits(this.accountTpm, this.estimatedTokens);
      this.account.tpmTat = correctTat(this.account.tpmTat, now, this.accountTpm, delta);
    }
  }

  topUp(estimatedTokens: number, now: number = Date.now()): TopUpResult {
    if (this.released || estimatedTokens <= this.estimatedTokens) return { ok: true, info: this.info };
    const { keyTpm, accountTpm, key: k, account: a } = this;
    // Only the difference, each limit's charge clamped as at acquire (a call bigger than a minute's budget
    // still passes when the bucket holds nothing but this call).
    const kExtra =
      keyTpm === null ? 0 : chargedUnits(keyTpm, estimatedTokens) - chargedUnits(keyTpm, this.estimatedTokens);
    const aExtra =
      accountTpm === null
        ? 0
        : chargedUnits(accountTpm, estimatedTokens) - chargedUnits(accountTpm, this.estimatedTokens);
    // A difference of 0 is never refused (a TAT a forced call left past a minute ahead would refuse even that).
    const kt = keyTpm === null || kExtra === 0 ? null : gcra(k.tpmTat, now, keyTpm, kExtra, newCheck());
    const at = accountTpm === null || aExtra === 0 ? null : gcra(a.tpmTat, now, accountTpm, aExtra, newCheck());
    const requests = this.requestsInfo(now);
    // Both checked before either is taken; on equal waits the key's refusal is reported (as in acquire).
    const deny =
      kt !== null && !kt.allowed && (at === null || at.allowed || kt.retryAfterMs >= at.retryAfterMs)
        ? { scope: "key" as const, limit: keyTpm!, check: kt }
        : at !== null && !at.allowed
          ? { scope: "account" as const, limit: accountTpm!, check: at }
          : null;
    if (deny !== null) {
      return {
        ok: false,
        retryAfterMs: deny.check.retryAfterMs,
        limit: deny.limit,
        remaining: deny.check.remaining,
        scope: deny.scope,
        kind: "tpm",
        info: { requests, tokens: tighterTokens(keyTpm, k, accountTpm, a, now) },
      };
    }
    if (kt !== null) k.tpmTat = kt.newTat;
    if (at !== null) a.tpmTat = at.newTat;
    this.estimatedTokens = estimatedTokens;
    this.info = { requests, tokens: tighterTokens(keyTpm, k, accountTpm, a, now) };
    return { ok: true, info: this.info };
  }

  private requestsInfo(now: number): LimitState | null {
    const { keyRpm, accountRpm } = this;
    const kr = newCheck();
    const ar = newCheck();
    if (keyRpm !== null) gcra(this.key.rpmTat, now, keyRpm, 0, kr);
    if (accountRpm !== null) gcra(this.account.rpmTat, now, accountRpm, 0, ar);
    return tighter(keyRpm, kr, accountRpm, ar);
  }
}

/** The tpm header state as it is now (nothing taken). */
function tighterTokens(
  keyTpm: number | null,
  k: ScopeState,
  accountTpm: number | null,
  a: ScopeState,
  now: number,
): LimitState | null {
  const kt = newCheck();
  const at = newCheck();
  if (keyTpm !== null) gcra(k.tpmTat, now, keyTpm, 0, kt);
  if (accountTpm !== null) gcra(a.tpmTat, now, accountTpm, 0, at);
  return tighter(keyTpm, kt, accountTpm, at);
}

/**
 * In-process limiter for embedded mode (one process holds every counter). Synchronous: acquire returns its
 * result directly, so the caller's await costs one microtask and no I/O.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly keys = new Map<string, ScopeState>();
  private readonly accounts = new Map<string, ScopeState>();
  private readonly concurrencyRetryMs: number;
  private sinceSweep = 0;
  // Scratch for the four GCRA checks of one acquire; acquire is synchronous, so they are never shared.
  private readonly kr = newCheck();
  private readonly kt = newCheck();
  private readonly ar = newCheck();
  private readonly at = newCheck();

  // The refusal with the longest wait among the limits checked so far (denyRetryMs < 0: none).
  private denyRetryMs = -1;
  private denyScope: LimitScope = "key";
  private denyKind: LimitKind = "rpm";
  private denyLimit = 0;
  private denyRemaining = 0;

  constructor(options: MemoryRateLimiterOptions = {}) {
    this.concurrencyRetryMs = options.concurrencyRetryMs ?? 1000;
  }

  acquire(req: RateLimitRequest): AcquireResult {
    const kl = req.keyLimits;
    const al = req.accountLimits;
    if (!hasAnyLimit(kl) && !hasAnyLimit(al)) return UNLIMITED_GRANT;
    if (++this.sinceSweep >= SWEEP_EVERY) this.sweep(req.now);
    const k = stateOf(this.keys, req.keyId);
    const a = stateOf(this.accounts, req.accountId);
    const { now, estimatedTokens: est } = req;
    const { kr, kt, ar, at } = this;

    this.denyRetryMs = -1;
    // Every limit is checked before any is taken, so a refusal leaves all counters as they were. Order as in
    // redis.ts (rpm, tpm, concurrency; key, then account): on equal waits the first refusal is reported.
    if (kl.rpm !== null && !gcra(k.rpmTat, now, kl.rpm, 1, kr).allowed) {
      this.refuse("key", "rpm", kl.rpm, kr.remaining, kr.retryAfterMs);
    }
    if (kl.tpm !== null && !gcra(k.tpmTat, now, kl.tpm, est, kt).allowed) {
      this.refuse("key", "tpm", kl.tpm, kt.remaining, kt.retryAfterMs);
    }
    if (kl.concurrency !== null && k.inflight >= kl.concurrency) {
      this.refuse("key", "concurrency", kl.concurrency, 0, this.concurrencyRetryMs);
    }
    if (al.rpm !== null && !gcra(a.rpmTat, now, al.rpm, 1, ar).allowed) {
      this.refuse("account", "rpm", al.rpm, ar.remaining, ar.retryAfterMs);
    }
    if (al.tpm !== null && !gcra(a.tpmTat, now, al.tpm, est, at).allowed) {
      this.refuse("account", "tpm", al.tpm, at.remaining, at.retryAfterMs);
    }
    if (al.concurrency !== null && a.inflight >= al.concurrency) {
      this.refuse("account", "concurrency", al.concurrency, 0, this.concurrencyRetryMs);
    }
    if (this.denyRetryMs >= 0) {
      return {
        ok: false,
        retryAfterMs: this.denyRetryMs,
        limit: this.denyLimit,
        remaining: this.denyRemaining,
        scope: this.denyScope,
        kind: this.denyKind,
        info: this.currentInfo(k, a, kl, al, now),
      };
    }

    if (kl.rpm !== null) k.rpmTat = kr.newTat;
    if (kl.tpm !== null) k.tpmTat = kt.newTat;
    if (al.rpm !== null) a.rpmTat = ar.newTat;
    if (al.tpm !== null) a.tpmTat = at.newTat;
    k.inflight++;
    a.inflight++;
    const info: RateLimitInfo = {
      requests: tighter(kl.rpm, kr, al.rpm, ar),
      tokens: tighter(kl.tpm, kt, al.tpm, at),
    };
    return new MemoryGrant(info, k, a, kl.tpm, al.tpm, est, kl.rpm, al.rpm);
  }

  private refuse(scope: LimitScope, kind: LimitKind, limit: number, remaining: number, retryAfterMs: number): void {
    if (retryAfterMs > this.denyRetryMs) {
      this.denyRetryMs = retryAfterMs;
      this.denyScope = scope;
      this.denyKind = kind;
      this.denyLimit = limit;
      this.denyRemaining = remaining;
    }
  }

  // State without taking anything, for the headers of a refusal.
  private currentInfo(k: ScopeState, a: ScopeState, kl: RateLimits, al: RateLimits, now: number): RateLimitInfo {
    const { kr, kt, ar, at } = this;
    if (kl.rpm !== null) gcra(k.rpmTat, now, kl.rpm, 0, kr);
    if (kl.tpm !== null) gcra(k.tpmTat, now, kl.tpm, 0, kt);
    if (al.rpm !== null) gcra(a.rpmTat, now, al.rpm, 0, ar);
    if (al.tpm !== null) gcra(a.tpmTat, now, al.tpm, 0, at);
    return { requests: tighter(kl.rpm, kr, al.rpm, ar), tokens: tighter(kl.tpm, kt, al.tpm, at) };
  }

  /** Drops idle state (buckets full again, nothing in flight) so deleted keys do not pile up. */
  sweep(now: number): void {
    this.sinceSweep = 0;
    for (const map of [this.keys, this.accounts]) {
      for (const [id, s] of map) {
        if (s.inflight <= 0 && s.rpmTat <= now && s.tpmTat <= now) map.delete(id);
      }
    }
  }

  /** Number of scopes holding state, for tests and metrics. */
  get size(): number {
    return this.keys.size + this.accounts.size;
  }

  async close(): Promise<void> {}
}

function stateOf(map: Map<string, ScopeState>, id: string): ScopeState {
  let s = map.get(id);
  if (s === undefined) {
    s = { rpmTat: 0, tpmTat: 0, inflight: 0 };
    map.set(id, s);
  }
  return s;
}
