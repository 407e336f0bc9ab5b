import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { dropPrefix, TEST_REDIS_URL as REDIS_URL } from "../redis/test-fixture.ts";
import { afterAll, describe, expect, it, vi } from "vitest";
import { RedisSpendCounter } from "./spend-redis.ts";
import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import type { Reservation, ReserveResult, Rooms } from "./reservation.ts";
import { makeAccount, makeKey, spendCounterContract } from "./spend.suite.ts";

spendCounterContract("redis", async () => {
  const redis = new Redis(REDIS_URL);
  const prefix = `mgtest:spend:${randomUUID()}:`;
  // refreshMs 0: every get reads Redis, so the contract sees exactly what Redis holds. liftAfterMs 0: the
  // contract's lift is at once, as in one process; the delay across replicas is tested below.
  const counter = new RedisSpendCounter(redis, { prefix, refreshMs: 0, maxStaleMs: 0, liftAfterMs: 0 });
  return {
    counter,
    cleanup: async () => {
      await counter.close();
      await dropPrefix(redis, prefix);
      redis.disconnect();
    },
  };
});

describe("RedisSpendCounter across replicas", () => {
  const prefix = `mgtest:spend:${randomUUID()}:`;
  const c1 = new Redis(REDIS_URL);
  const c2 = new Redis(REDIS_URL);
  afterAll(async () => {
    await dropPrefix(c1, prefix);
    c1.disconnect();
    c2.disconnect();
  });

  it("sees another replica's spend once its cache is older than refreshMs", async () => {
    let clock = 1_000_000;
    const a = new RedisSpendCounter(c1, { prefix, clock: () => clock });
    const b = new RedisSpendCounter(c2, { prefix, clock: () => clock, refreshMs: 250, maxStaleMs: 2000 });
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    expect(await b.get(key, account)).toEqual({ keySpent: 0n, accountSpent: 0n });
    await a.add(key, account, 40n);
    // b's cache is fresh: no round trip, the old figure
    const fresh = b.get(key, account);
    expect(fresh instanceof Promise).toBe(false);
    expect(fresh).toEqual({ keySpent: 0n, accountSpent: 0n });
    // stale but usable: answered from cache while a refresh runs
    clock += 300;
    expect(b.get(key, account)).toEqual({ keySpent: 0n, accountSpent: 0n });
    // Once that refresh's round trip is back (not a fixed wait: a loaded machine can take longer than any), the
    // cache answers with the other replica's spend, still without a round trip of its own (the clock stands still).
    await vi.waitFor(() => expect(b.get(key, account)).toEqual({ keySpent: 40n, accountSpent: 40n }), {
      timeout: 5_000,
      interval: 5,
    });
    // too stale: awaited
    await a.add(key, account, 2n);
    clock += 5000;
    const awaited = b.get(key, account);
    expect(awaited instanceof Promise).toBe(true);
    expect(await awaited).toEqual({ keySpent: 42n, accountSpent: 42n });
  });

  it("keeps keys of one call under the account's hash tag", async () => {
    const counter = new RedisSpendCounter(c1, { prefix });
    const account = makeAccount("0");
    await counter.add(makeKey(account.id, "0", "key-9"), account, 1n);
    const keys = (await c1.keys(`${prefix}{acct:${account.id}}*`)).sort();
    expect(keys.map((k) => k.slice(prefix.length))).toEqual([`{acct:${account.id}}:a`, `{acct:${account.id}}:k:key-9`]);
  });

  it("still counts its own spend while Redis is unreachable", async () => {
    const broken = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    const errors: unknown[] = [];
    const counter = new RedisSpendCounter(broken, { prefix, onError: (e) => errors.push(e) });
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    await counter.add(key, account, 30n);
    expect(await counter.get(key, account)).toEqual({ keySpent: 30n, accountSpent: 30n });
    expect(errors.length).toBe(1);
    broken.disconnect();
  });

  it("forgets counters idle for idleMs, but not while Redis fails", async () => {
    let clock = 2_000_000;
    const counter = new RedisSpendCounter(c1, { prefix, clock: () => clock, idleMs: 60_000 });
    const account = makeAccount("0");
    const keys = ["idle-1", "idle-2", "busy"].map((id) => makeKey(account.id, "0", id));
    for (const k of keys) await counter.get(k, account);
    expect(counter.cached).toBe(4); // three keys and their account
    clock += 30_000;
    await counter.add(keys[2]!, account, 5n); // refreshes "busy" and the account
    clock += 31_000;
    expect(await counter.get(keys[2]!, account)).toMatchObject({ keySpent: 5n });
    expect(counter.cached).toBe(2);
    // an idle counter read again comes from Redis, exact
    await c1.incrby(`${prefix}{acct:${account.id}}:k:idle-1`, 7);
    expect(await counter.get(keys[0]!, account)).toMatchObject({ keySpent: 7n });

    // While Redis fails, the cache holds this replica's own spend: nothing is forgotten.
    const broken = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    const offline = new RedisSpendCounter(broken, { prefix, clock: () => clock, idleMs: 60_000, onError: () => {} });
    await offline.add(keys[0]!, account, 30n);
    clock += 61_000;
    await offline.add(keys[1]!, account, 1n); // fails again: Redis still away
    clock += 59_000;
    expect(await offline.get(keys[0]!, account)).toEqual({ keySpent: 30n, accountSpent: 31n });
    broken.disconnect();
  });

  it("sweeps in slices: a call looks at a bounded number of counters, the next slice 10 ms later", async () => {
    let clock = 3_000_000;
    const counter = new RedisSpendCounter(c1, { prefix, clock: () => clock, idleMs: 60_000, sweepSlice: 4 });
    const account = makeAccount("0");
    const keys = Array.from({ length: 9 }, (_, i) => makeKey(account.id, "0", `slice-${i}`));
    // The cache's order (a Map's): slice-0, the account, slice-1 … slice-8.
    for (const k of keys) await counter.get(k, account);
    expect(counter.cached).toBe(10);
    const busy = keys[8]!;
    clock += 59_000;
    await counter.get(busy, account); // read from Redis again (too old to use): "busy" and the account are fresh
    clock += 1_000; // the sweep is due
    await counter.get(busy, account); // slice 1: slice-0, the account (fresh, kept), slice-1, slice-2
    expect(counter.cached).toBe(7);
    await counter.get(busy, account); // the next slice is not due yet
    expect(counter.cached).toBe(7);
    clock += 10;
    await counter.get(busy, account); // slice 2: slice-3 … slice-6
    expect(counter.cached).toBe(3);
    clock += 10;
    await counter.get(busy, account); // slice 3: slice-7, and "busy" (kept); the sweep ends
    expect(counter.cached).toBe(2);
    clock += 10;
    await counter.get(busy, account);
    expect(counter.cached).toBe(2);
  });

  it("sums one key's adds of one turn into one script call, exact to the micro-unit", async () => {
    const counter = new RedisSpendCounter(c1, { prefix });
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    const other = makeKey(account.id, "0", "key-other");
    const spy = vi.spyOn(c1, "modelgateSpendAdd");
    let calls = 0;
    try {
      // 2^53 + 1 would be lost in a double: the sum must stay a decimal string end to end
      await Promise.all([
        counter.add(key, account, 9_007_199_254_740_993n),
        counter.add(key, account, 7n),
        counter.add(other, account, 5n),
      ]);
    } finally {
      calls = spy.mock.calls.length;
      spy.mockRestore();
    }
    expect(calls).toBe(2); // one per key
    expect(await c1.get(`${prefix}{acct:${account.id}}:k:${key.id}`)).toBe("9007199254741000");
    expect(await c1.get(`${prefix}{acct:${account.id}}:a`)).toBe("9007199254741005");
    expect(await counter.get(key, account)).toEqual({
      keySpent: 9_007_199_254_741_000n,
      accountSpent: 9_007_199_254_741_005n,
    });
  });
});

describe("RedisSpendCounter reservations", () => {
  const prefix = `mgtest:spend:${randomUUID()}:`;
  const c1 = new Redis(REDIS_URL);
  const c2 = new Redis(REDIS_URL);
  afterAll(async () => {
    await dropPrefix(c1, prefix);
    c1.disconnect();
    c2.disconnect();
  });
  const rooms = (key: bigint | null, account: bigint | null): Rooms => ({ key, account });
  const held = (r: ReserveResult): Reservation => {
    if (!r.ok) throw new Error("expected a reservation");
    return r.reservation;
  };
  const holdsOf = async (account: AccountSnapshot, key: KeySnapshot) =>
    (await c1.hvals(`${prefix}{acct:${account.id}}:k:${key.id}:held`)).map((v) => v.split(" ")[0]);

  it("holds far from every limit without a round trip, and lets Redis decide near one", async () => {
    const counter = new RedisSpendCounter(c1, { prefix, clock: () => 5_000_000 });
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    await counter.get(key, account); // the view: fresh for as long as the clock stands still
    const spy = vi.spyOn(c1, "modelgateSpendReserve");
    try {
      // 400 of 1000 free: this replica's unwritten holds stay within half of what Redis has free
      const a = held(await counter.reserve(key, account, 400_000n, rooms(1_000_000n, null)));
      expect(spy).toHaveBeenCalledTimes(0);
      // 800 would not: Redis decides (it fits: 400 + 400 ≤ 1000)
      const b = held(await counter.reserve(key, account, 400_000n, rooms(1_000_000n, null)));
      expect(spy).toHaveBeenCalledTimes(1);
      expect(await holdsOf(account, key)).toEqual(["800000"]);
      // 300 more does not fit: refused by Redis
      expect((await counter.reserve(key, account, 300_000n, rooms(1_000_000n, null))).ok).toBe(false);
      expect(spy).toHaveBeenCalledTimes(2);
      await counter.settle(a, 100n);
      await counter.settle(b, 0n);
      expect(await holdsOf(account, key)).toEqual([]); // released with the cost, in the same script
      expect(await counter.get(key, account)).toEqual({ keySpent: 100n, accountSpent: 100n });
    } finally {
      spy.mockRestore();
      await counter.close();
    }
  });

  it("counts the other replicas' holds, and writes a hold taken locally within publishMs", async () => {
    const a = new RedisSpendCounter(c1, { prefix, publishMs: 5 });
    const b = new RedisSpendCounter(c2, { prefix, refreshMs: 0, maxStaleMs: 0 });
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    await a.get(key, account);
    const r = held(await a.reserve(key, account, 300n, rooms(1000n, 1_000_000n))); // local: 600 ≤ 1000
    await vi.waitFor(async () => expect(await holdsOf(account, key)).toEqual(["300"]), { timeout: 5_000, interval: 5 });
    // b sees a's 300: 300 + 701 > 1000, 300 + 700 fits
    expect(await b.reserve(key, account, 701n, rooms(1000n, 1_000_000n))).toEqual({
      ok: false,
      spend: { keySpent: 1000n, accountSpent: 0n },
    });
    const rb = held(await b.reserve(key, account, 700n, rooms(1000n, 1_000_000n)));
    await a.settle(r, 250n);
    await b.settle(rb, 700n);
    expect(await b.get(key, account)).toEqual({ keySpent: 950n, accountSpent: 950n });
    await a.close();
    await b.close();
  });

  it("lets a dead replica's holds expire after reserveTtlMs, while a live one's are renewed", async () => {
    const dead = new RedisSpendCounter(c1, { prefix, refreshMs: 0, maxStaleMs: 0, reserveTtlMs: 300 });
    const live = new RedisSpendCounter(c1, { prefix, refreshMs: 0, maxStaleMs: 0, reserveTtlMs: 300 });
    const other = new RedisSpendCounter(c2, { prefix, refreshMs: 0, maxStaleMs: 0 });
    const account = makeAccount("0");
    const k1 = makeKey(account.id, "0");
    const k2 = makeKey(account.id, "0");
    held(await dead.reserve(k1, account, 900n, rooms(1000n, null)));
    await dead.close(); // stops its heartbeat: as a replica that died holding the call
    const kept = held(await live.reserve(k2, account, 900n, rooms(1000n, null)));
    const field = `${prefix}{acct:${account.id}}:k:${k2.id}:held`;
    const expiryOf = async () => Number((await c1.hvals(field))[0]!.split(" ")[1]);
    const first = await expiryOf();
    expect((await other.reserve(k1, account, 900n, rooms(1000n, null))).ok).toBe(false);
    // the dead replica's hold goes by itself; the live one's expiry moves on (its heartbeat, every 100 ms)
    const r = await vi.waitFor(
      async () => {
        const res = await other.reserve(k1, account, 900n, rooms(1000n, null));
        expect(res.ok).toBe(true);
        return res;
      },
      { timeout: 5_000, interval: 20 },
    );
    await vi.waitFor(async () => expect(await expiryOf()).toBeGreaterThan(first), { timeout: 5_000, interval: 20 });
    expect((await other.reserve(k2, account, 900n, rooms(1000n, null))).ok).toBe(false); // k2 still held
    await other.settle(held(r), 0n);
    await live.settle(kept, 0n);
    await live.close();
    await other.close();
  });

  it("costs one Redis command per call far from its limits (the add it always sent), two near one", async () => {
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    /** commands sent for `calls` calls one after the other, each holding `micro` and costing `cost` */
    const count = async (calls: number, micro: bigint, cost: bigint, room: bigint): Promise<number> => {
      // addWindowMs 0: each call's add goes at the end of its turn (the window's batching has its own test)
      const counter = new RedisSpendCounter(c1, { prefix, clock: () => 6_000_000, addWindowMs: 0 });
      await counter.get(key, account); // the view, fresh while the clock stands still
      const spy = vi.spyOn(c1, "sendCommand");
      try {
        for (let i = 0; i < calls; i++) {
          const r = held(await counter.reserve(key, account, micro, rooms(room, 10n ** 12n)));
          await counter.settle(r, cost);
        }
        await counter.close(); // flushes what waits for its window (nothing: each call wrote its holds)
        return spy.mock.calls.length;
      } finally {
        spy.mockRestore();
      }
    };
    // far: 20 calls holding 100 against 1,000,000 (1,000 spent by them)
    const far = await count(20, 100n, 50n, 1_000_000n);
    // near: 1,500 left, so a hold of 1,000 is more than half of it: Redis decides each (and they cost nothing)
    const near = await count(20, 1_000n, 0n, 2_500n);
    console.log(`Redis commands per call: far from the limit ${far / 20}, near it ${near / 20}`);
    expect(far).toBe(20);
    expect(near).toBe(40);
  });

  it("adds the costs of the calls that end within one window in one script, counting them here at once", async () => {
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    const counter = new RedisSpendCounter(c1, { prefix, clock: () => 7_000_000, addWindowMs: 200 });
    await counter.get(key, account);
    const spy = vi.spyOn(c1, "sendCommand");
    try {
      const calls: Reservation[] = [];
      for (let i = 0; i < 20; i++) calls.push(held(await counter.reserve(key, account, 100n, rooms(1_000_000n, null))));
      const added = calls.map((r) => counter.settle(r, 30n));
      // this replica sees the 20 costs before any of them reached Redis
      expect(counter.get(key, account)).toEqual({ keySpent: 600n, accountSpent: 600n });
      expect(spy.mock.calls.length).toBe(0);
      await Promise.all(added);
      expect(spy.mock.calls.length).toBe(1);
    } finally {
      spy.mockRestore();
    }
    const name = `${prefix}{acct:${account.id}}:k:${key.id}`;
    expect(await c1.get(name)).toBe("600");
    expect(await c1.hvals(`${name}:held`)).toEqual([]); // the holds went with the costs, in the same script
    await counter.close();
  });

  it("never counts twice a cost whose call settled before its add went", async () => {
    const account = makeAccount("1000");
    const k1 = makeKey(account.id, "400", "key-1");
    const k2 = makeKey(account.id, "0", "key-2");
    const name = `${prefix}{acct:${account.id}}`;
    // the counters as Redis has them: up to date with everything settled so far
    await c1.mset(`${name}:k:key-1`, "400", `${name}:k:key-2`, "0", `${name}:a`, "1000");
    const counter = new RedisSpendCounter(c1, { prefix, refreshMs: 0, maxStaleMs: 0, addWindowMs: 60_000 });
    // two calls end (100 on key 1, 30 on key 2); their adds wait for the window
    const first = counter.add(k1, account, 100n);
    const second = counter.add(k2, account, 30n);
    // their usage events settle meanwhile: the next snapshots' settled figures hold both costs, and a third call
    // on key 1, admitted on them, ends before the window does
    const k1Later = { ...k1, spent: "500" };
    const accountLater = { ...account, spent: "1130" };
    const third = counter.add(k1Later, accountLater, 5n);
    await counter.close(); // the window ends: key 1's batch (first, third) goes before key 2's
    await Promise.all([first, second, third]);
    // every cost counted once: key 1 has 400 settled before, +100 +5; the account 1000 +100 +30 +5
    expect(await c1.get(`${name}:k:key-1`)).toBe("505");
    expect(await c1.get(`${name}:a`)).toBe("1135");
    const reader = new RedisSpendCounter(c2, { prefix, refreshMs: 0, maxStaleMs: 0 });
    expect(await reader.get({ ...k1Later, spent: "505" }, { ...accountLater, spent: "1135" })).toEqual({
      keySpent: 0n,
      accountSpent: 0n,
    });
    await reader.close();
  });

  it("never counts twice another replica's cost that settled before its add went", async () => {
    let clock = 9_000_000;
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    const name = `${prefix}{acct:${account.id}}`;
    const opts = { prefix, clock: () => clock, refreshMs: 0, maxStaleMs: 0 };
    // replica A's call ends: its cost waits for A's window, while its usage event goes to the stream at once
    const a = new RedisSpendCounter(c1, { ...opts, addWindowMs: 60_000 });
    const b = new RedisSpendCounter(c2, { ...opts, addWindowMs: 0 });
    const first = a.add(key, account, 100n);
    // settlement is quicker than the window: B's next snapshot has A's cost settled, and B's call ends on it
    const keyLater = { ...key, spent: "100" };
    const accountLater = { ...account, spent: "100" };
    await b.add(keyLater, accountLater, 5n);
    // B saw the counter (0) below the settled figure (100) but did not lift it: A's add was on its way
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("5");
    await a.close();
    await first;
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("105");
    expect(await c1.get(`${name}:a`)).toBe("105");
    expect(await b.get({ ...keyLater, spent: "105" }, { ...accountLater, spent: "105" })).toEqual({
      keySpent: 0n,
      accountSpent: 0n,
    });

    // A minute later Redis lost the counters, with 1000 settled: the first add lifts them to the figure B saw a
    // minute ago (100), the one it sees now only once it has seen it for liftAfterMs
    clock += 60_000;
    await c1.del(`${name}:k:${key.id}`, `${name}:a`);
    const keyNow = { ...key, spent: "1000" };
    const accountNow = { ...account, spent: "1000" };
    await b.add(keyNow, accountNow, 7n);
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("107");
    clock += 9_999;
    await b.add(keyNow, accountNow, 1n);
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("108");
    clock += 1;
    await b.add(keyNow, accountNow, 3n);
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("1003");
    expect(await c1.get(`${name}:a`)).toBe("1003");
    // never above the batch's own figure: a lower one (spend lowered since) is the floor at once
    await c1.del(`${name}:k:${key.id}`);
    clock += 60_000;
    await b.add({ ...key, spent: "40" }, accountNow, 2n);
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("2");
    clock += 10_000;
    await b.add({ ...key, spent: "40" }, accountNow, 2n);
    expect(await c1.get(`${name}:k:${key.id}`)).toBe("42");
    await b.close();
  });

  it("never shows Redis less than a replica spent while its costs wait for their window", async () => {
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    const a = new RedisSpendCounter(c1, { prefix, refreshMs: 60_000, maxStaleMs: 120_000, addWindowMs: 60_000 });
    const b = new RedisSpendCounter(c2, { prefix, refreshMs: 0, maxStaleMs: 0 });
    const room = rooms(1_000n, null);
    await a.get(key, account);
    // far from the limit: a holds 100 without Redis, and its cost (800) waits for the window
    const added = a.settle(held(await a.reserve(key, account, 100n, room)), 800n);
    const name = `${prefix}{acct:${account.id}}:k:${key.id}`;
    expect(await c1.get(name)).toBe(null);
    // a's next call is near the limit, so Redis decides: the unsent 800 counts as spent (the call may go alone
    // with the 200 left, as once the add went), and a's field carries it beside the new hold
    const second = held(await a.reserve(key, account, 150n, room));
    const fields = async () =>
      Object.entries(await c1.hgetall(`${name}:held`))
        .map(([f, v]) => `${f.endsWith(":u") ? "unsent" : "held"} ${v.split(" ")[0]}`)
        .sort();
    expect(await fields()).toEqual(["held 150", "unsent 800"]);
    // b counts a's unsent cost as spent and a's hold as held: 150 + 800 of 1,000, so 100 more does not fit
    expect(await b.get(key, account)).toEqual({ keySpent: 800n, accountSpent: 800n });
    expect((await b.reserve(key, account, 100n, room)).ok).toBe(false);
    // a's second call ends: Redis showed its hold, so the release goes at once (the cost still in its window)
    await a.settle(second, 0n);
    expect(await fields()).toEqual(["unsent 800"]);
    expect((await b.reserve(key, account, 150n, room)).ok).toBe(true); // alone: 800 of 1,000 spent, none held
    // the window ends (close flushes it): the cost is in the counter and a's field is gone
    await a.close();
    await added;
    expect(await c1.get(name)).toBe("800");
    expect(await fields()).toEqual(["held 150"]); // b's hold
    await b.close();
  });

  it("releases at once a hold Redis showed, however much spend waits for the window beside it", async () => {
    const account = makeAccount("0");
    const key = makeKey(account.id, "0");
    const clock = () => 8_000_000;
    const counter = new RedisSpendCounter(c1, { prefix, clock, addWindowMs: 60_000, publishMs: 60_000 });
    const name = `${prefix}{acct:${account.id}}:k:${key.id}`;
    const fields = async () =>
      Object.entries(await c1.hgetall(`${name}:held`))
        .map(([f, v]) => `${f.endsWith(":u") ? "unsent" : "held"} ${v.split(" ")[0]}`)
        .sort();
    await counter.get(key, account);
    // 600 of 1,000 is more than half of what is free: Redis decides, and shows the hold
    const r = held(await counter.reserve(key, account, 600n, rooms(1_000n, null)));
    expect(await fields()).toEqual(["held 600"]);
    // a correction larger than that hold waits for the window: Redis' figure less the unsent costs is now below 0
    const corrected = counter.add(key, account, 700n);
    const settled = counter.settle(r, 5n);
    // the release (and its cost) goes at the end of the turn; the correction still waits beside it
    await vi.waitFor(async () => expect(await fields()).toEqual(["unsent 700"]), { timeout: 2_000, interval: 5 });
    await settled;
    expect(await c1.get(name)).toBe("5");
    await counter.close();
    await corrected;
    expect(await c1.get(name)).toBe("705");
    expect(await fields()).toEqual([]);
  });
});
