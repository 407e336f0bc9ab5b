// GCRA (generic cell rate algorithm), the token bucket written as one timestamp: TAT, the theoretical arrival
// time at which the bucket would be full again. A limit of L per minute refills one unit every T = 60000/L ms
// and holds at most L units, so a full minute's budget may be spent at once, then L per minute sustained.
// One number per limit, no per-request entries, and it corrects in O(1) when release() learns the actual token
// count. The Lua script in redis.ts mirrors these formulas line for line.

export const PERIOD_MS = 60_000;
// Float slack (10 µs): L grants of T = 60000/L must fit one period although T is inexact and epoch
// milliseconds near 1.7e12 keep only about 2e-4 ms of precision in a double (Lua uses doubles too).
export const EPSILON = 0.01;

export interface GcraCheck {
  allowed: boolean;
  /** the TAT to store when allowed */
  newTat: number;
  retryAfterMs: number;
  remaining: number;
  resetMs: number;
}

/** cost is clamped to the limit: a call bigger than a minute's budget passes when the bucket is full. */
export function gcra(tat: number, now: number, limit: number, cost: number, out: GcraCheck): GcraCheck {
  const interval = PERIOD_MS / limit;
  const charged = cost > limit ? limit : cost;
  const base = tat > now ? tat : now;
  const newTat = base + charged * interval;
  const allowAt = newTat - PERIOD_MS;
  if (allowAt - now > EPSILON) {
    out.allowed = false;
    out.newTat = tat;
    out.retryAfterMs = Math.ceil(allowAt - now - EPSILON);
    out.remaining = Math.max(0, Math.floor((PERIOD_MS - (base - now)) / interval + EPSILON));
    out.resetMs = Math.ceil(base - now - EPSILON);
  } else {
    out.allowed = true;
    out.newTat = newTat;
    out.retryAfterMs = 0;
    out.remaining = Math.max(0, Math.floor((PERIOD_MS - (newTat - now)) / interval + EPSILON));
    out.resetMs = Math.ceil(newTat - now - EPSILON);
  }
  return out;
}

/** Units charged at acquire for a given estimate (see the clamp above). */
export const chargedUnits = (limit: number, cost: number): number => (cost > limit ? limit : cost);

/**
 * Applies release()'s correction (actual − charged tokens) to a TAT. Extra tokens are charged from now when
 * the bucket had already refilled; tokens given back never make the bucket hold more than a full minute.
 */
export function correctTat(tat: number, now: number, limit: number, delta: number): number {
  if (delta === 0) return tat;
  const interval = PERIOD_MS / limit;
  if (delta > 0) return (tat > now ? tat : now) + delta * interval;
  const lowered = tat + delta * interval;
  return lowered > now ? lowered : now;
}
