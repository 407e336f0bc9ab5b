// What topUpLimits does to an admitted call, whatever the limiter; run by admission.test.ts (in-memory) and
// admission.services.test.ts (Redis).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RateLimits } from "../contract/snapshot.ts";
import { GatewayError } from "../errors.ts";
import { rateLimitHeaders } from "../ratelimit/headers.ts";
import type { AcquireResult, RateLimiter } from "../ratelimit/types.ts";
import { type Admission, type Caller, startLimits, topUpLimits } from "./admission.ts";
import type { DataPlaneOptions } from "./context.ts";

const NONE: RateLimits = { rpm: null, tpm: null, concurrency: null };

export function topUpCases(name: string, setup: () => Promise<{ limiter: RateLimiter; cleanup(): Promise<void> }>) {
  describe(`topUpLimits: ${name}`, () => {
    let fx: { limiter: RateLimiter; cleanup(): Promise<void> };
    let opts: DataPlaneOptions;
    beforeAll(async () => {
      fx = await setup();
      opts = { rateLimiter: fx.limiter } as unknown as DataPlaneOptions;
    });
    afterAll(async () => {
      await fx.cleanup();
    });

    const now = Math.floor(Date.now() / 1000) * 1000;
    const caller = (accountId: string, key: Partial<RateLimits>, account: Partial<RateLimits> = {}): Caller =>
      ({
        key: { id: `k-${randomUUID()}`, limits: { ...NONE, ...key } },
        account: { id: accountId, limits: { ...NONE, ...account } },
        clientIp: null,
      }) as unknown as Caller;
    const admitted = async (c: Caller, estimate: number): Promise<Admission> => {
      const r = await startLimits(opts, c, estimate, now);
      if (!r.ok) throw new Error(`expected a grant: ${JSON.stringify(r)}`);
      return {
        model: {} as never,
        price: {} as never,
        fallbacks: [],
        grant: r,
        headers: rateLimitHeaders(r.info),
        estimatedPromptTokens: estimate,
      };
    };
    const refusal = (r: AcquireResult) => (r.ok ? null : [r.scope, r.kind]);

    it("takes only the larger estimate's difference and says so in the headers", async () => {
      const c = caller(`a-${randomUUID()}`, { rpm: 10, tpm: 1000, concurrency: 1 });
      const a = await admitted(c, 100);
      expect(a.headers["x-ratelimit-remaining-tokens"]).toBe("900");
      await topUpLimits(a, 400, now);
      expect(a.estimatedPromptTokens).toBe(400);
      expect(a.headers["x-ratelimit-remaining-tokens"]).toBe("600");
      expect(a.headers["x-ratelimit-remaining-requests"]).toBe("9"); // still one request
      // settled against the topped-up estimate: 50 used of 400
      await a.grant.release(50, now);
      const next = await startLimits(opts, c, 950, now);
      expect(next.ok && next.info.tokens?.remaining).toBe(0);
      expect(next.ok && next.info.requests?.remaining).toBe(8);
    });

    // Topping up as give-back then take let a call started meanwhile take the slot (or the tokens) of a call
    // already admitted, which was then refused: the two below fail that way.
    it("keeps the call's slot: a call started while it tops up cannot take it", async () => {
      const c = caller(`a-${randomUUID()}`, { tpm: 100_000, concurrency: 1 });
      const a = await admitted(c, 100);
      const topping = topUpLimits(a, 2000, now);
      const racing = startLimits(opts, c, 100, now);
      await expect(topping).resolves.toBeUndefined();
      expect(refusal(await racing)).toEqual(["key", "concurrency"]);
      await a.grant.release(2000, now);
    });

    it("takes the difference atomically: a call of the account started while it tops up cannot take the tokens", async () => {
      const accountId = `a-${randomUUID()}`;
      const a = await admitted(caller(accountId, {}, { tpm: 1000 }), 100);
      const topping = topUpLimits(a, 600, now);
      const racing = startLimits(opts, caller(accountId, {}, { tpm: 1000 }), 500, now);
      await expect(topping).resolves.toBeUndefined();
      expect(refusal(await racing)).toEqual(["account", "tpm"]);
      expect(a.headers["x-ratelimit-remaining-tokens"]).toBe("400");
      await a.grant.release(600, now);
    });

    it("ends a refused top-up as a refusal at admission: a tpm 429 with its wait, and all the call took given back", async () => {
      const accountId = `a-${randomUUID()}`;
      const lim = { rpm: 2, tpm: 1000, concurrency: 1 };
      const c = caller(accountId, lim);
      const earlier = await startLimits(opts, c, 500, now);
      if (earlier.ok) await earlier.release(500, now);
      const a = await admitted(c, 100);
      const err = await topUpLimits(a, 600, now).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayError);
      const gw = err as GatewayError;
      expect([gw.status, gw.code]).toEqual([429, "rate_limit_exceeded"]);
      // 500 more, 400 free: 100 tokens short, 6 s at 1000 a minute, the wait a fresh call of 600 is told once
      // this one's 100 are back (the headers are the state the refusal was decided on, those 100 still held)
      expect(gw.message).toBe("Rate limit reached for this API key: 1000 tokens per minute. Retry after 6s.");
      expect(gw.headers).toMatchObject({
        "retry-after-ms": "6000",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "400",
      });
      expect(a.estimatedPromptTokens).toBe(100);
      // The call's request, tokens and slot are back (a release after it changes nothing), so a fresh call of
      // 500 takes what the earlier one left, in the minute's second request, and the slot.
      await a.grant.release(600, now);
      const fresh = await startLimits(opts, c, 500, now);
      expect(fresh.ok && fresh.info).toEqual({
        requests: { limit: 2, remaining: 0, resetMs: 60_000 },
        tokens: { limit: 1000, remaining: 0, resetMs: 60_000 },
      });
      if (fresh.ok) await fresh.cancel(now);
      // and the wait it was told is enough for the whole new estimate
      expect(refusal(await startLimits(opts, c, 600, now + 5_999))).toEqual(["key", "tpm"]);
      const retried = await startLimits(opts, c, 600, now + 6_000);
      expect(retried.ok).toBe(true);
      if (retried.ok) await retried.release(600, now + 6_000);
    });
  });
}
