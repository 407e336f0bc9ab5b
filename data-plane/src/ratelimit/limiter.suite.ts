// The behaviour every RateLimiter must have; run by memory.test.ts and redis.services.test.ts.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RateLimits } from "../contract/snapshot.ts";
import type { AcquireResult, RateLimitDenial, RateLimitGrant, RateLimiter, RateLimitRequest } from "./types.ts";

export interface RateLimiterFixture {
  limiter: RateLimiter;
  cleanup(): Promise<void>;
}

const NONE: RateLimits = { rpm: null, tpm: null, concurrency: null };
const limits = (l: Partial<RateLimits>): RateLimits => ({ ...NONE, ...l });

function grant(r: AcquireResult): RateLimitGrant {
  if (!r.ok) throw new Error(`expected a grant, got a refusal: ${JSON.stringify(r)}`);
  return r;
}
function denial(r: AcquireResult): RateLimitDenial {
  if (r.ok) throw new Error(`expected a refusal, got a grant: ${JSON.stringify(r.info)}`);
  return r;
}

export function rateLimiterContract(name: string, setup: () => Promise<RateLimiterFixture>): void {
  describe(`RateLimiter contract: ${name}`, () => {
    let fx: RateLimiterFixture;
    beforeAll(async () => {
      fx = await setup();
    });
    afterAll(async () => {
      await fx.cleanup();
    });

    // Fresh ids per test so tests never share counters; times near the real clock (leases use it).
    const T0 = Math.floor(Date.now() / 1000) * 1000;
    const ids = () => ({ keyId: `k-${randomUUID()}`, accountId: `a-${randomUUID()}` });
    const req = (
      id: { keyId: string; accountId: string },
      keyLimits: Partial<RateLimits>,
      accountLimits: Partial<RateLimits> = {},
      now = T0,
      estimatedTokens = 0,
    ): RateLimitRequest => ({
      ...id,
      keyLimits: limits(keyLimits),
      accountLimits: limits(accountLimits),
      estimatedTokens,
      now,
    });
    const acquire = async (r: RateLimitRequest) => fx.limiter.acquire(r);

    it("grants without limits and reports no header info", async () => {
      const g = grant(await acquire(req(ids(), {})));
      expect(g.info).toEqual({ requests: null, tokens: null });
      await g.release(10, T0);
    });

    it("holds a key's RPM, counting down remaining and reporting the reset", async () => {
      const id = ids();
      const infos = [];
      for (let i = 0; i < 3; i++) infos.push(grant(await acquire(req(id, { rpm: 3 }))).info.requests);
      expect(infos).toEqual([
        { limit: 3, remaining: 2, resetMs: 20_000 },
        { limit: 3, remaining: 1, resetMs: 40_000 },
        { limit: 3, remaining: 0, resetMs: 60_000 },
      ]);
      const d = denial(await acquire(req(id, { rpm: 3 }, {}, T0 + 5_000)));
      expect({ ...d, info: undefined }).toEqual({
        ok: false,
        retryAfterMs: 15_000,
        limit: 3,
        remaining: 0,
        scope: "key",
        kind: "rpm",
        info: undefined,
      });
      expect(d.info.requests).toEqual({ limit: 3, remaining: 0, resetMs: 55_000 });
      // one slot refills every 20 s
      expect(grant(await acquire(req(id, { rpm: 3 }, {}, T0 + 20_000))).info.requests?.remaining).toBe(0);
      expect((await acquire(req(id, { rpm: 3 }, {}, T0 + 20_001))).ok).toBe(false);
    });

    it("holds limits that do not divide a minute evenly", async () => {
      const id = ids();
      let granted = 0;
      for (let i = 0; i < 10; i++) if ((await acquire(req(id, { rpm: 7 }))).ok) granted++;
      expect(granted).toBe(7);
    });

    it("shares an account's RPM between its keys and says the account refused", async () => {
      const accountId = `a-${randomUUID()}`;
      const k1 = { keyId: `k-${randomUUID()}`, accountId };
      const k2 = { keyId: `k-${randomUUID()}`, accountId };
      grant(await acquire(req(k1, { rpm: 10 }, { rpm: 2 })));
      const g = grant(await acquire(req(k2, { rpm: 10 }, { rpm: 2 })));
      // the tighter limit is the account's (0 left) rather than the key's (9 left)
      expect(g.info.requests).toEqual({ limit: 2, remaining: 0, resetMs: 60_000 });
      const d = denial(await acquire(req(k1, { rpm: 10 }, { rpm: 2 })));
      expect([d.scope, d.kind, d.limit, d.retryAfterMs]).toEqual(["account", "rpm", 2, 30_000]);
    });

    it("takes nothing when any limit refuses", async () => {
      const accountId = `a-${randomUUID()}`;
      const k1 = { keyId: `k-${randomUUID()}`, accountId };
      const k2 = { keyId: `k-${randomUUID()}`, accountId };
      grant(await acquire(req(k1, { rpm: 1 }, { rpm: 10 })));
      denial(await acquire(req(k1, { rpm: 1 }, { rpm: 10 })));
      denial(await acquire(req(k1, { rpm: 1 }, { rpm: 10 })));
      // the account has given one request, not three
      const g = grant(await acquire(req(k2, {}, { rpm: 10 })));
      expect(g.info.requests).toEqual({ limit: 10, remaining: 8, resetMs: 12_000 });
    });

    it("holds TPM with the estimate and reports the wait for enough tokens", async () => {
      const id = ids();
      const g = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 600)));
      expect(g.info.tokens).toEqual({ limit: 1000, remaining: 400, resetMs: 36_000 });
      const d = denial(await acquire(req(id, { tpm: 1000 }, {}, T0, 600)));
      expect([d.kind, d.scope, d.limit, d.remaining, d.retryAfterMs]).toEqual(["tpm", "key", 1000, 400, 12_000]);
      expect(d.info.tokens).toEqual({ limit: 1000, remaining: 400, resetMs: 36_000 });
    });

    it("corrects the token charge on release: unused tokens come back, extra ones are charged", async () => {
      const id = ids();
      const g = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 600)));
      await g.release(100, T0);
      const g2 = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 900)));
      expect(g2.info.tokens).toEqual({ limit: 1000, remaining: 0, resetMs: 60_000 });
      denial(await acquire(req(id, { tpm: 1000 }, {}, T0, 1)));

      const id2 = ids();
      const g3 = grant(await acquire(req(id2, { tpm: 1000 }, {}, T0, 100)));
      await g3.release(700, T0);
      const d = denial(await acquire(req(id2, { tpm: 1000 }, {}, T0, 500)));
      expect([d.remaining, d.retryAfterMs]).toEqual([300, 12_000]);
    });

    it("lets one call bigger than a minute's tokens through when the bucket is full", async () => {
      const id = ids();
      const g = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 5000)));
      expect(g.info.tokens).toEqual({ limit: 1000, remaining: 0, resetMs: 60_000 });
      expect((await acquire(req(id, { tpm: 1000 }, {}, T0 + 59_000, 5000))).ok).toBe(false);
      expect((await acquire(req(id, { tpm: 1000 }, {}, T0 + 60_000, 5000))).ok).toBe(true);
    });

    it("holds concurrency per key and per account, freeing a slot on release exactly once", async () => {
      const accountId = `a-${randomUUID()}`;
      const k1 = { keyId: `k-${randomUUID()}`, accountId };
      const k2 = { keyId: `k-${randomUUID()}`, accountId };
      const a = grant(await acquire(req(k1, { concurrency: 2 }, { concurrency: 3 })));
      grant(await acquire(req(k1, { concurrency: 2 }, { concurrency: 3 })));
      const d = denial(await acquire(req(k1, { concurrency: 2 }, { concurrency: 3 })));
      expect([d.scope, d.kind, d.limit, d.remaining, d.retryAfterMs]).toEqual(["key", "concurrency", 2, 0, 1000]);
      grant(await acquire(req(k2, { concurrency: 2 }, { concurrency: 3 })));
      const d2 = denial(await acquire(req(k2, { concurrency: 2 }, { concurrency: 3 })));
      expect([d2.scope, d2.kind, d2.limit]).toEqual(["account", "concurrency", 3]);
      await a.release(0, T0);
      await a.release(0, T0);
      grant(await acquire(req(k2, { concurrency: 2 }, { concurrency: 3 })));
      expect((await acquire(req(k2, { concurrency: 2 }, { concurrency: 3 }))).ok).toBe(false);
    });

    it("gives a cancelled call's request, tokens and slot back, once", async () => {
      const id = ids();
      const lim = { rpm: 2, tpm: 100, concurrency: 1 };
      const first = grant(await acquire(req(id, lim, lim, T0, 60)));
      expect((await acquire(req(id, lim, lim, T0, 60))).ok).toBe(false); // the slot and the tokens are taken
      await first.cancel(T0);
      await first.cancel(T0);
      await first.release(60, T0); // after cancel: nothing more
      // Both requests of the minute, all 100 tokens and the slot are there again, for the key and the account.
      const again = grant(await acquire(req(id, lim, lim, T0, 100)));
      expect(again.info.requests).toEqual({ limit: 2, remaining: 1, resetMs: 30_000 });
      await again.release(100, T0);
      grant(await acquire(req(id, { ...lim, tpm: null }, { ...lim, tpm: null }, T0)));
      expect(
        denial(
          await acquire(
            req(id, { ...lim, tpm: null, concurrency: null }, { ...lim, tpm: null, concurrency: null }, T0),
          ),
        ).kind,
      ).toBe("rpm");
    });

    it("tops up a call's tokens by the difference only, keeping its request and slot", async () => {
      const id = ids();
      const lim = { rpm: 2, tpm: 1000, concurrency: 1 };
      const g = grant(await acquire(req(id, lim, {}, T0, 100)));
      const up = await g.topUp(400, T0);
      if (!up.ok) throw new Error(`expected the top-up granted: ${JSON.stringify(up)}`);
      // 400 tokens taken in all, not 500; one request; the headers say so
      expect(up.info.tokens).toEqual({ limit: 1000, remaining: 600, resetMs: 24_000 });
      expect(up.info.requests).toEqual({ limit: 2, remaining: 1, resetMs: 30_000 });
      expect(g.info).toEqual(up.info);
      // the slot is still this call's, and a smaller estimate changes nothing
      expect(denial(await acquire(req(id, lim, {}, T0, 1))).kind).toBe("concurrency");
      expect(await g.topUp(300, T0)).toEqual({ ok: true, info: up.info });
      // The release corrects against the topped-up estimate: 250 used of 400, so 750 free after it.
      await g.release(250, T0);
      const next = grant(await acquire(req(id, lim, {}, T0, 750)));
      expect(next.info.tokens?.remaining).toBe(0);
      expect(next.info.requests?.remaining).toBe(0); // two requests in all
    });

    it("refuses a top-up that does not fit as acquire refuses tpm, and changes nothing", async () => {
      const accountId = `a-${randomUUID()}`;
      const k1 = { keyId: `k-${randomUUID()}`, accountId };
      const k2 = { keyId: `k-${randomUUID()}`, accountId };
      const other = grant(await acquire(req(k2, {}, { tpm: 1000 }, T0, 500)));
      const g = grant(await acquire(req(k1, { tpm: 2000, rpm: 5 }, { tpm: 1000 }, T0, 100)));
      const d = await g.topUp(600, T0 + 1000);
      if (d.ok) throw new Error("expected the top-up refused");
      // 500 more do not fit the account's 1000 (600 taken, 16⅔ refilled in the second since): 83⅓ short, 5 s
      // at 1000 a minute, the wait a fresh call of 600 would be told once this one gave its 100 back
      expect([d.kind, d.scope, d.limit, d.remaining, d.retryAfterMs]).toEqual(["tpm", "account", 1000, 416, 5_000]);
      expect(d.info.tokens).toEqual({ limit: 1000, remaining: 416, resetMs: 35_000 });
      expect(d.info.requests).toEqual({ limit: 5, remaining: 4, resetMs: 11_000 });
      await other.cancel(T0 + 1000);
      // Nothing changed: the call holds 100 tokens (the key's 1900 free, the account's 916 after the cancel),
      // and its release settles against its first estimate.
      const probe = grant(await acquire(req(k1, { tpm: 2000, rpm: 5 }, { tpm: 1000 }, T0 + 1000, 0)));
      expect(probe.info.tokens).toEqual({ limit: 1000, remaining: 916, resetMs: 5_000 });
      await g.release(100, T0 + 1000);
      await probe.release(0, T0 + 1000);
      expect(grant(await acquire(req(k1, { tpm: 2000 }, { tpm: 1000 }, T0 + 1000, 916))).info.tokens?.remaining).toBe(
        0,
      );
    });

    it("gives all of a topped-up call back on cancel", async () => {
      const id = ids();
      const lim = { rpm: 1, tpm: 1000, concurrency: 1 };
      const g = grant(await acquire(req(id, lim, lim, T0, 100)));
      expect((await g.topUp(900, T0)).ok).toBe(true);
      await g.cancel(T0);
      expect(await g.topUp(1000, T0)).toEqual({ ok: true, info: g.info }); // ended: nothing more
      const again = grant(await acquire(req(id, lim, lim, T0, 1000)));
      expect(again.info).toEqual({
        requests: { limit: 1, remaining: 0, resetMs: 60_000 },
        tokens: { limit: 1000, remaining: 0, resetMs: 60_000 },
      });
    });

    it("tops up past a minute's tokens only as far as acquire would charge", async () => {
      const id = ids();
      const g = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 100)));
      // 5000 tokens charge a full minute (1000), as acquire would: the bucket holds nothing else
      const up = await g.topUp(5000, T0);
      expect(up.ok && up.info.tokens).toEqual({ limit: 1000, remaining: 0, resetMs: 60_000 });
      await g.release(1000, T0);
      expect((await acquire(req(id, { tpm: 1000 }, {}, T0 + 59_000, 1000))).ok).toBe(false);
      expect((await acquire(req(id, { tpm: 1000 }, {}, T0 + 60_000, 1000))).ok).toBe(true);
    });

    it("lets exactly one of two top-ups racing for the last tokens through", async () => {
      const id = ids();
      const a = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 100)));
      const b = grant(await acquire(req(id, { tpm: 1000 }, {}, T0, 100)));
      const results = await Promise.all([a.topUp(600, T0), b.topUp(600, T0)]);
      expect(results.map((r) => r.ok).sort()).toEqual([false, true]);
      expect(results.find((r) => !r.ok)).toMatchObject({ kind: "tpm", remaining: 300 });
    });

    it("reports the refusal with the longest wait when several refuse", async () => {
      const id = ids();
      grant(await acquire(req(id, { rpm: 1, tpm: 100 }, {}, T0, 100)));
      const d = denial(await acquire(req(id, { rpm: 1, tpm: 100 }, {}, T0 + 1000, 50)));
      // rpm frees in 59 s, 50 tokens in 29 s
      expect([d.kind, d.retryAfterMs]).toEqual(["rpm", 59_000]);
    });
  });
}
