import type { RateLimits } from "../contract/snapshot.ts";
import { chargedUnits, PERIOD_MS } from "./gcra.ts";
import { hasAnyLimit, sameRateLimits } from "./types.ts";

// What one replica knows of a scope's limits (a key's, or an account's) without asking Redis: the free units
// Redis reported in its latest answer for that scope, less what this replica has sent since and not yet heard
// back about. RedisRateLimiter admits a call without waiting for Redis while, by this reckoning, every limit
// the call touches keeps more than a set share of itself free after it; the call is still taken in Redis
// (forced), so Redis keeps the exact count and the next answer corrects the view.

/** Free units after a call, per limit of one scope; a field is meaningful only where that limit is set. */
export interface Free {
  rpm: number;
  tpm: number;
  conc: number;
}

interface View extends Free {
  /** the caller's clock when Redis answered (the request's `now`) */
  at: number;
  limits: RateLimits;
}

export const UNLIMITED_FREE: Readonly<Free> = Object.freeze({ rpm: Infinity, tpm: Infinity, conc: Infinity });

/** Milliseconds until a GCRA limit with `free` units left is full again (as the Lua script reports it). */
export const resetMsOf = (limit: number, free: number): number =>
  Math.max(0, Math.ceil(((limit - free) * PERIOD_MS) / limit));

export class Headroom {
  private readonly views = new Map<string, View>();
  private readonly inFlight = new Map<string, Free>();

  /**
   * @param minFreeShare a call goes without waiting only if each limit keeps more than this share of itself
   *   free after it (0.5: the last half of every limit is always decided by Redis); 1 or more: never
   * @param maxAgeMs a view older than this is not used (other replicas' calls since are unknown)
   */
  constructor(
    private readonly minFreeShare: number,
    private readonly maxAgeMs: number,
  ) {}

  /**
   * The free units each limit of `scope` keeps after one more call of `tokens` estimated tokens, when that
   * is enough for every limit set to admit it without waiting; null when Redis must decide.
   */
  admit(scope: string, limits: RateLimits, tokens: number, now: number): Free | null {
    if (!hasAnyLimit(limits)) return UNLIMITED_FREE;
    const v = this.views.get(scope);
    if (v === undefined || now < v.at || now - v.at > this.maxAgeMs || !sameRateLimits(v.limits, limits)) return null;
    const sent = this.inFlight.get(scope);
    const free: Free = { rpm: Infinity, tpm: Infinity, conc: Infinity };
    if (limits.rpm !== null) {
      free.rpm = v.rpm - (sent?.rpm ?? 0) - 1;
      if (free.rpm <= limits.rpm * this.minFreeShare) return null;
    }
    if (limits.tpm !== null) {
      free.tpm = v.tpm - (sent?.tpm ?? 0) - chargedUnits(limits.tpm, tokens);
      if (free.tpm <= limits.tpm * this.minFreeShare) return null;
    }
    if (limits.concurrency !== null) {
      free.conc = v.conc - (sent?.conc ?? 0) - 1;
      if (free.conc <= limits.concurrency * this.minFreeShare) return null;
    }
    return free;
  }

  /** A call's acquire is on its way to Redis. */
  sent(scope: string, limits: RateLimits, tokens: number): void {
    if (!hasAnyLimit(limits)) return;
    let f = this.inFlight.get(scope);
    if (f === undefined) this.inFlight.set(scope, (f = { rpm: 0, tpm: 0, conc: 0 }));
    f.rpm += 1;
    f.tpm += limits.tpm === null ? 0 : chargedUnits(limits.tpm, tokens);
    f.conc += 1;
  }

  /** Redis answered a call's acquire (`free`: what it reported left after it), or failed to (null). */
  heard(scope: string, limits: RateLimits, tokens: number, at: number, free: Free | null): void {
    if (!hasAnyLimit(limits)) return;
    const f = this.inFlight.get(scope);
    if (f !== undefined) {
      f.rpm -= 1;
      f.tpm -= limits.tpm === null ? 0 : chargedUnits(limits.tpm, tokens);
      f.conc -= 1;
      if (f.rpm <= 0) this.inFlight.delete(scope);
    }
    if (free === null) this.views.delete(scope);
    else this.views.set(scope, { at, limits, rpm: free.rpm, tpm: free.tpm, conc: free.conc });
  }

  /** This replica's call used `tokens` more than it was charged (known at release): less is free than Redis said. */
  charge(scope: string, tokens: number): void {
    const v = this.views.get(scope);
    if (v !== undefined && tokens > 0) v.tpm -= tokens;
  }

  /** Forgets views too old to be used (run now and then, so idle keys do not pile up). */
  sweep(now: number): void {
    for (const [scope, v] of this.views) if (now - v.at > this.maxAgeMs) this.views.delete(scope);
  }

  get size(): number {
    return this.views.size;
  }
}
