// The behaviour every SpendCounter must have; run by spend.test.ts and spend-redis.services.test.ts.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import type { Reservation, ReserveResult, Rooms } from "./reservation.ts";
import type { SpendCounter } from "./spend.ts";

export interface SpendCounterFixture {
  counter: SpendCounter;
  cleanup(): Promise<void>;
}

export const makeKey = (accountId: string, spent = "0", id = `k-${randomUUID()}`): KeySnapshot => ({
  id,
  accountId,
  name: "test",
  status: "active",
  expiresAt: null,
  quota: null,
  spent,
  allowedModels: [],
  ipAllowlist: [],
  limits: { rpm: null, tpm: null, concurrency: null },
});

export const makeAccount = (spent: string | null = "0", id = `a-${randomUUID()}`): AccountSnapshot => ({
  id,
  name: "Acme",
  status: "active",
  balance: "1000000",
  ...(spent === null ? {} : { spent }),
  limits: { rpm: null, tpm: null, concurrency: null },
  contracts: {},
});

export function spendCounterContract(name: string, setup: () => Promise<SpendCounterFixture>): void {
  describe(`SpendCounter contract: ${name}`, () => {
    let fx: SpendCounterFixture;
    beforeAll(async () => {
      fx = await setup();
    });
    afterAll(async () => {
      await fx.cleanup();
    });
    const get = async (k: KeySnapshot, a: AccountSnapshot) => fx.counter.get(k, a);

    it("starts at zero", async () => {
      const a = makeAccount();
      expect(await get(makeKey(a.id), a)).toEqual({ keySpent: 0n, accountSpent: 0n });
    });

    it("adds spend to the key and its account", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      await fx.counter.add(k, a, 100n);
      await fx.counter.add(k, a, 250n);
      expect(await get(k, a)).toEqual({ keySpent: 350n, accountSpent: 350n });
    });

    it("shares the account's counter between its keys", async () => {
      const a = makeAccount();
      const k1 = makeKey(a.id);
      const k2 = makeKey(a.id);
      await fx.counter.add(k1, a, 100n);
      await fx.counter.add(k2, a, 50n);
      expect(await get(k1, a)).toEqual({ keySpent: 100n, accountSpent: 150n });
      expect(await get(k2, a)).toEqual({ keySpent: 50n, accountSpent: 150n });
    });

    it("does not count twice what a newer snapshot has settled", async () => {
      const a = makeAccount("1000");
      const k = makeKey(a.id, "400");
      await fx.counter.add(k, a, 100n);
      await fx.counter.add(k, a, 60n);
      expect(await get(k, a)).toEqual({ keySpent: 160n, accountSpent: 160n });
      // the control plane settled the first call: spent grew by 100 in the next snapshot
      const k2 = { ...k, spent: "500" };
      const a2 = { ...a, spent: "1100" };
      expect(await get(k2, a2)).toEqual({ keySpent: 60n, accountSpent: 60n });
      // and both
      expect(await get({ ...k, spent: "560" }, { ...a, spent: "1160" })).toEqual({ keySpent: 0n, accountSpent: 0n });
      // a replica still on the old snapshot counts conservatively
      expect(await get(k, a)).toEqual({ keySpent: 160n, accountSpent: 160n });
    });

    it("never goes negative and lifts a counter that fell behind the settled figure", async () => {
      const a = makeAccount("0");
      const k = makeKey(a.id, "0");
      await fx.counter.add(k, a, 10n);
      // spend settled that this counter never saw (say its add failed while the event still settled)
      const k2 = { ...k, spent: "500" };
      const a2 = { ...a, spent: "500" };
      expect(await get(k2, a2)).toEqual({ keySpent: 0n, accountSpent: 0n });
      await fx.counter.add(k2, a2, 7n);
      expect(await get(k2, a2)).toEqual({ keySpent: 7n, accountSpent: 7n });
    });

    it("stays exact beyond 2^53 and takes refunds", async () => {
      const a = makeAccount("9007199254740993");
      const k = makeKey(a.id, "9007199254740993");
      await fx.counter.add(k, a, 9_007_199_254_740_993n);
      expect(await get(k, a)).toEqual({ keySpent: 9_007_199_254_740_993n, accountSpent: 9_007_199_254_740_993n });
      await fx.counter.add(k, a, -3n);
      expect(await get(k, a)).toEqual({ keySpent: 9_007_199_254_740_990n, accountSpent: 9_007_199_254_740_990n });
    });

    it("enforces the account from the snapshot alone when it carries no settled spend", async () => {
      const a = makeAccount(null);
      const k = makeKey(a.id);
      await fx.counter.add(k, a, 100n);
      expect(await get(k, a)).toEqual({ keySpent: 100n, accountSpent: 0n });
    });

    const rooms = (key: bigint | null, account: bigint | null): Rooms => ({ key, account });
    const held = (r: ReserveResult): Reservation => {
      if (!r.ok)
        throw new Error(`expected a reservation, got a refusal: ${JSON.stringify(r.spend, (_k, v) => String(v))}`);
      return r.reservation;
    };

    it("holds a reservation against the key's room until it is settled, then counts the cost", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      const first = held(await fx.counter.reserve(k, a, 600n, rooms(1000n, null)));
      // 600 held + 600 more > 1000: refused, with the spend that makes checkKeyPolicy see the quota used up
      expect(await fx.counter.reserve(k, a, 600n, rooms(1000n, null))).toEqual({
        ok: false,
        spend: { keySpent: 1199n, accountSpent: 0n },
      });
      const second = held(await fx.counter.reserve(k, a, 400n, rooms(1000n, null))); // 600 + 400 fits exactly
      await fx.counter.settle(first, 500n);
      await fx.counter.settle(first, 500n); // once only
      expect(await get(k, a)).toEqual({ keySpent: 500n, accountSpent: 500n });
      // 500 spent, 400 held: 100 fits, 101 does not
      expect((await fx.counter.reserve(k, a, 101n, rooms(1000n, null))).ok).toBe(false);
      const third = held(await fx.counter.reserve(k, a, 100n, rooms(1000n, null)));
      await fx.counter.settle(second, 0n); // a failed call: its hold goes, nothing is added
      await fx.counter.settle(third, 100n);
      expect(await get(k, a)).toEqual({ keySpent: 600n, accountSpent: 600n });
    });

    it("lets a call go alone while anything is left, and none once nothing is", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      // nothing held: a call whose estimate is above the remainder still goes (as before reservations)
      const alone = held(await fx.counter.reserve(k, a, 5000n, rooms(null, 1000n)));
      expect(await fx.counter.reserve(k, a, 1n, rooms(null, 1000n))).toEqual({
        ok: false,
        spend: { keySpent: 0n, accountSpent: 5000n },
      });
      await fx.counter.settle(alone, 1000n);
      // the account's room is used up: refused even alone, with the spend as it is
      expect(await fx.counter.reserve(k, a, 1n, rooms(null, 1000n))).toEqual({
        ok: false,
        spend: { keySpent: 1000n, accountSpent: 1000n },
      });
    });

    it("never refuses a subject without a limit", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      const rs = [];
      for (let i = 0; i < 3; i++) rs.push(held(await fx.counter.reserve(k, a, 10n ** 15n, rooms(null, null))));
      for (const r of rs) await fx.counter.settle(r, 1n);
      expect(await get(k, a)).toEqual({ keySpent: 3n, accountSpent: 3n });
    });

    it("admits parallel reservations only as far as they fit: 40 of 300 against 1000 hold 3", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      const results = await Promise.all(
        Array.from({ length: 40 }, async () => fx.counter.reserve(k, a, 300n, rooms(1000n, 1000n))),
      );
      const ok = results.filter((r) => r.ok);
      expect(ok.length).toBe(3);
      await Promise.all(ok.map((r) => fx.counter.settle(held(r), 300n)));
      expect(await get(k, a)).toEqual({ keySpent: 900n, accountSpent: 900n });
    });

    it("resets a key's counter, or the account's", async () => {
      const a = makeAccount();
      const k = makeKey(a.id);
      await fx.counter.add(k, a, 100n);
      await fx.counter.reset(a.id, k.id);
      expect(await get(k, a)).toEqual({ keySpent: 0n, accountSpent: 100n });
      await fx.counter.reset(a.id);
      expect(await get(k, a)).toEqual({ keySpent: 0n, accountSpent: 0n });
      await fx.counter.add(k, a, 5n);
      expect(await get(k, a)).toEqual({ keySpent: 5n, accountSpent: 5n });
    });
  });
}
