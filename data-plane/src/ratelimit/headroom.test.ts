import { describe, expect, it } from "vitest";
import type { RateLimits } from "../contract/snapshot.ts";
import { type Free, Headroom, resetMsOf } from "./headroom.ts";

const limits = (l: Partial<RateLimits>): RateLimits => ({ rpm: null, tpm: null, concurrency: null, ...l });

/** A Headroom that sent one call of `tokens` for scope "k" and heard Redis answer `free` at `at`. */
function answered(l: RateLimits, free: Free, at: number, tokens: number, share = 0.5): Headroom {
  const h = new Headroom(share, 1000);
  h.sent("k", l, tokens);
  h.heard("k", l, tokens, at, free);
  return h;
}

describe("Headroom", () => {
  it("admits nothing locally before Redis has answered for the scope", () => {
    const h = new Headroom(0.5, 1000);
    expect(h.admit("k", limits({ rpm: 100 }), 0, 1_000)).toBeNull();
  });

  it("admits a scope without limits at once", () => {
    const h = new Headroom(0.5, 1000);
    expect(h.admit("k", limits({}), 10, 1_000)).toEqual({ rpm: Infinity, tpm: Infinity, conc: Infinity });
  });

  it("admits while every limit keeps more than the share free, counting calls not yet answered", () => {
    const l = limits({ rpm: 10, tpm: 1000, concurrency: 100 });
    const h = answered(l, { rpm: 9, tpm: 900, conc: 99 }, 1_000, 100);
    // 9 free: 8 after one more call, more than half of 10
    expect(h.admit("k", l, 100, 1_010)).toEqual({ rpm: 8, tpm: 800, conc: 98 });
    h.sent("k", l, 100);
    h.sent("k", l, 100);
    // two on their way: 6 requests, 600 tokens would be left, still more than half
    expect(h.admit("k", l, 100, 1_010)).toEqual({ rpm: 6, tpm: 600, conc: 96 });
    h.sent("k", l, 100);
    // three on their way: 5 would be left, which is not more than half: Redis decides
    expect(h.admit("k", l, 100, 1_010)).toBeNull();
    // Redis answers all three, another replica's call in between: 6 left after them; the view is Redis's now
    for (const rpm of [8, 7, 6]) h.heard("k", l, 100, 1_020, { rpm, tpm: rpm * 100, conc: 100 - (10 - rpm) });
    expect(h.admit("k", l, 100, 1_020)).toBeNull();
    h.heard("k", l, 100, 1_030, { rpm: 8, tpm: 800, conc: 98 }); // refilled meanwhile
    expect(h.admit("k", l, 100, 1_030)).toEqual({ rpm: 7, tpm: 700, conc: 97 });
  });

  it("leaves the last share of the token limit to Redis, by the call's estimate", () => {
    const l = limits({ tpm: 1000 });
    const h = answered(l, { rpm: 0, tpm: 1000, conc: 0 }, 1_000, 0);
    expect(h.admit("k", l, 499, 1_000)?.tpm).toBe(501);
    expect(h.admit("k", l, 500, 1_000)).toBeNull();
    // an estimate over the whole limit is charged as the limit (gcra's clamp)
    expect(h.admit("k", l, 5000, 1_000)).toBeNull();
  });

  it("counts tokens a call used beyond its estimate against what Redis said was free", () => {
    const l = limits({ tpm: 1500 });
    const h = answered(l, { rpm: 0, tpm: 1470, conc: 0 }, 1_000, 30);
    expect(h.admit("k", l, 30, 1_000)?.tpm).toBe(1440);
    h.charge("k", 1970); // the call used 2000 tokens
    expect(h.admit("k", l, 30, 1_000)).toBeNull();
  });

  it("does not use a view that is too old, from a later clock, or for other limits", () => {
    const l = limits({ rpm: 100 });
    const h = answered(l, { rpm: 99, tpm: 0, conc: 0 }, 10_000, 0);
    expect(h.admit("k", l, 0, 11_000)).not.toBeNull();
    expect(h.admit("k", l, 0, 11_001)).toBeNull();
    expect(h.admit("k", l, 0, 9_999)).toBeNull();
    expect(h.admit("k", limits({ rpm: 200 }), 0, 10_000)).toBeNull();
    h.sweep(11_001);
    expect(h.size).toBe(0);
  });

  it("forgets a scope's view when Redis could not be asked", () => {
    const l = limits({ rpm: 100 });
    const h = answered(l, { rpm: 99, tpm: 0, conc: 0 }, 1_000, 0);
    h.sent("k", l, 0);
    h.heard("k", l, 0, 1_001, null);
    expect(h.admit("k", l, 0, 1_002)).toBeNull();
  });

  it("never admits locally with a share of 1", () => {
    const l = limits({ rpm: 100 });
    const h = answered(l, { rpm: 100, tpm: 0, conc: 0 }, 1_000, 0, 1);
    expect(h.admit("k", l, 0, 1_000)).toBeNull();
  });

  it("reports the reset the way the script does", () => {
    expect(resetMsOf(10, 8)).toBe(12_000);
    expect(resetMsOf(3, 3)).toBe(0);
  });
});
