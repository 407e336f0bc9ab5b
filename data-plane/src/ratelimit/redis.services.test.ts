import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { eventually } from "../../../test/helpers/processes.ts";
import { dropPrefix, redisLimiterFixture, TEST_REDIS_URL as REDIS_URL } from "../redis/test-fixture.ts";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { rateLimiterContract } from "./limiter.suite.ts";
import { RedisRateLimiter } from "./redis.ts";
import type { RateLimits } from "../contract/snapshot.ts";

rateLimiterContract("redis", async () => redisLimiterFixture());

const none: RateLimits = { rpm: null, tpm: null, concurrency: null };

/** Three Redis connections (replicas' own clients), limiters on them under one fresh prefix; all closed after. */
function replicas() {
  const prefix = `mgtest:rl:${randomUUID()}:`;
  const clients: Redis[] = [];
  const limiters: RedisRateLimiter[] = [];
  beforeAll(() => {
    for (let i = 0; i < 3; i++) clients.push(new Redis(REDIS_URL));
  });
  afterAll(async () => {
    for (const l of limiters) await l.close();
    await dropPrefix(clients[0]!, prefix);
    for (const c of clients) c.disconnect();
  });
  const replica = (i: number, options: ConstructorParameters<typeof RedisRateLimiter>[1] = {}) => {
    const l = new RedisRateLimiter(clients[i]!, { prefix, ...options });
    limiters.push(l);
    return l;
  };
  return { prefix, clients, replica };
}

describe("RedisRateLimiter across replicas", () => {
  const { prefix, clients, replica } = replicas();

  it("two replicas together hold an RPM limit within 5%", async () => {
    const a = replica(0);
    const b = replica(1);
    const keyId = randomUUID();
    const accountId = randomUUID();
    const start = Date.now();
    // 600 concurrent attempts over 12 simulated seconds against 300 rpm: 60 s of refill is 300, 12 s of refill
    // is 60 more after the initial burst of 300, so exactly 360 may pass.
    const attempts = Array.from({ length: 600 }, (_, i) =>
      (i % 2 === 0 ? a : b).acquire({
        keyId,
        accountId,
        keyLimits: { ...none, rpm: 300 },
        accountLimits: none,
        estimatedTokens: 0,
        now: start + Math.floor((i * 12_000) / 600),
      }),
    );
    const granted = (await Promise.all(attempts)).filter((r) => r.ok).length;
    expect(Math.abs(granted - 360) / 360).toBeLessThanOrEqual(0.05);
    expect(granted).toBeGreaterThanOrEqual(300);
  });

  it("frees the concurrency slots of a replica that died once its leases expire", async () => {
    const dying = replica(0, { leaseTtlMs: 5_000 });
    const survivor = replica(1, { leaseTtlMs: 5_000 });
    const base = {
      keyId: randomUUID(),
      accountId: randomUUID(),
      keyLimits: { ...none, concurrency: 1 },
      accountLimits: none,
      estimatedTokens: 0,
    };
    const now = Date.now();
    expect((await dying.acquire({ ...base, now })).ok).toBe(true);
    await dying.close(); // dies holding the slot, never releasing it
    expect((await survivor.acquire({ ...base, now: now + 4_999 })).ok).toBe(false);
    const g = await survivor.acquire({ ...base, now: now + 5_001 });
    expect(g.ok).toBe(true);
  });

  it("keeps a long call's slot alive by renewing its lease", async () => {
    let clock = Date.now();
    const holder = replica(0, { leaseTtlMs: 5_000, clock: () => clock });
    const other = replica(1, { leaseTtlMs: 5_000 });
    const base = {
      keyId: randomUUID(),
      accountId: randomUUID(),
      keyLimits: none,
      accountLimits: { ...none, concurrency: 1 },
      estimatedTokens: 0,
    };
    const start = clock;
    const held = await holder.acquire({ ...base, now: start });
    expect(held.ok).toBe(true);
    clock = start + 4_000;
    await holder.renewLeases();
    expect((await other.acquire({ ...base, now: start + 8_000 })).ok).toBe(false);
    expect((await other.acquire({ ...base, now: start + 9_001 })).ok).toBe(true);
    if (held.ok) await held.release(0);
  });

  it("falls back to in-process limits when Redis cannot be reached", async () => {
    const broken = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    broken.on("error", () => undefined);
    const errors: unknown[] = [];
    const limiter = new RedisRateLimiter(broken, { prefix, onError: (e) => errors.push(e) });
    const r = { keyId: "k", accountId: "a", keyLimits: { ...none, rpm: 1 }, accountLimits: none, estimatedTokens: 0 };
    expect((await limiter.acquire({ ...r, now: 0 })).ok).toBe(true);
    expect((await limiter.acquire({ ...r, now: 1 })).ok).toBe(false);
    expect(errors.length).toBe(2);
    await limiter.close();
    broken.disconnect();
  });

  it("puts every key of one call under the account's hash tag", async () => {
    const l = replica(2);
    const accountId = randomUUID();
    const g = await l.acquire({
      keyId: "key-1",
      accountId,
      keyLimits: { rpm: 5, tpm: 100, concurrency: 2 },
      accountLimits: { rpm: 5, tpm: 100, concurrency: 2 },
      estimatedTokens: 10,
      now: Date.now(),
    });
    expect(g.ok).toBe(true);
    const keys = (await clients[2]!.keys(`${prefix}{acct:${accountId}}*`)).sort();
    expect(keys.map((k) => k.slice(prefix.length))).toEqual(
      ["a:conc", "a:rpm", "a:tpm", "k:key-1:conc", "k:key-1:rpm", "k:key-1:tpm"].map((s) => `{acct:${accountId}}:${s}`),
    );
    if (g.ok) await g.release(10);
    expect(await clients[2]!.zcard(`${prefix}{acct:${accountId}}:a:conc`)).toBe(0);
  });

  it("frees the calls of one account that end in the same turn with one script call, exactly as one by one", async () => {
    const l = replica(2);
    const accountId = randomUUID();
    const client = clients[2]!;
    const keyLimits = { rpm: 1000, tpm: 100_000, concurrency: 10 };
    const accountLimits = { rpm: 1000, tpm: 100_000, concurrency: 10 };
    const now = Date.now();
    const grants = await Promise.all(
      ["key-a", "key-b", "key-a"].map((keyId) =>
        l.acquire({ keyId, accountId, keyLimits, accountLimits, estimatedTokens: 100, now }),
      ),
    );
    expect(grants.every((g) => g.ok)).toBe(true);
    const tag = `${prefix}{acct:${accountId}}:`;
    expect(await client.zcard(`${tag}a:conc`)).toBe(3);
    const tatBefore = Number(await client.get(`${tag}a:tpm`));
    const spy = vi.spyOn(client, "modelgateRlRelease");
    let sent: number[] = [];
    try {
      // each call used 40 tokens fewer than estimated: 3 × 40 tokens back on the account's TPM
      await Promise.all(grants.map((g) => (g.ok ? g.release(60, now) : undefined)));
    } finally {
      sent = spy.mock.calls.map((c) => Number(c[0])); // numkeys of each call
      spy.mockRestore();
    }
    expect(sent).toEqual([12]); // one call: the account's three keys plus three per run of one key's calls (a, b, a)
    expect(await client.zcard(`${tag}a:conc`)).toBe(0);
    expect(await client.zcard(`${tag}k:key-a:conc`)).toBe(0);
    expect(await client.zcard(`${tag}k:key-b:conc`)).toBe(0);
    const interval = 60_000 / 100_000;
    expect(Number(await client.get(`${tag}a:tpm`))).toBeCloseTo(tatBefore - 3 * 40 * interval, 6);
  });

  it("sends nothing to release an rpm-only call", async () => {
    const l = replica(2);
    const client = clients[2]!;
    const spy = vi.spyOn(client, "modelgateRlRelease");
    let sent = -1;
    try {
      const g = await l.acquire({
        keyId: "k",
        accountId: randomUUID(),
        keyLimits: { ...none, rpm: 10 },
        accountLimits: none,
        estimatedTokens: 5,
        now: Date.now(),
      });
      expect(g.ok).toBe(true);
      if (g.ok) await g.release(500);
    } finally {
      sent = spy.mock.calls.length;
      spy.mockRestore();
    }
    expect(sent).toBe(0);
  });

  it("takes the limits of one account's calls of one turn in one script call (after the turn's first), in arrival order", async () => {
    const l = replica(1);
    const client = clients[1]!;
    const accounts = [randomUUID(), randomUUID()];
    const spy = vi.spyOn(client, "modelgateRlAcquire");
    let sent: number[] = [];
    let results;
    try {
      const now = Date.now();
      results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          l.acquire({
            keyId: `k${i % 3}`,
            accountId: accounts[i % 2]!,
            keyLimits: none,
            accountLimits: { ...none, concurrency: 3 },
            estimatedTokens: 0,
            now,
          }),
        ),
      );
    } finally {
      sent = spy.mock.calls.map((c) => Number(c[0])); // numkeys of each call
      spy.mockRestore();
    }
    // The turn's first acquire goes out at once on its own; then one call per account for the rest, six keys
    // for each run of one key's calls it carries (here the keys alternate, so one per call: 4 and 5).
    expect(sent[0]).toBe(6);
    expect(sent.slice(1).sort((x, y) => x - y)).toEqual([24, 30]);
    // per account the first three in arrival order get a slot, the last two are refused
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true, true, true, false, false, false, false]);
    for (const r of results) if (r.ok) await r.release(0);
  });

  it("sends consecutive calls of one key as one run, still taken one by one", async () => {
    const l = replica(1, { localFreeShare: 1 });
    const client = clients[1]!;
    const accountId = randomUUID();
    const acquireSpy = vi.spyOn(client, "modelgateRlAcquire");
    const releaseSpy = vi.spyOn(client, "modelgateRlRelease");
    let acquires: number[] = [];
    let releases: number[] = [];
    try {
      const now = Date.now();
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          l.acquire({
            keyId: "k",
            accountId,
            keyLimits: { ...none, rpm: 4, concurrency: 10 },
            accountLimits: none,
            estimatedTokens: 0,
            now,
          }),
        ),
      );
      // the first goes at once; the other five as one run of one key: six keys, not thirty; the limit still
      // counts them one by one
      expect(results.map((r) => r.ok)).toEqual([true, true, true, true, false, false]);
      await Promise.all(results.map((r) => (r.ok ? r.release(0, now) : undefined)));
    } finally {
      acquires = acquireSpy.mock.calls.map((c) => Number(c[0]));
      releases = releaseSpy.mock.calls.map((c) => Number(c[0]));
      acquireSpy.mockRestore();
      releaseSpy.mockRestore();
    }
    expect(acquires).toEqual([6, 6]);
    expect(releases).toEqual([6]); // the account's three keys and one run of four
    expect(await client.zcard(`${prefix}{acct:${accountId}}:k:k:conc`)).toBe(0);
  });
});

describe("the rate-limit scripts", () => {
  const { prefix, clients, replica } = replicas();

  it("take and free a batch of calls exactly as one script call per call would, leases expiring midway", async () => {
    replica(0); // defines the scripts on the client
    const client = clients[0]!;
    const keysOf = (tag: string) => [
      `${tag}k:k:rpm`,
      `${tag}k:k:tpm`,
      `${tag}k:k:conc`,
      `${tag}a:rpm`,
      `${tag}a:tpm`,
      `${tag}a:conc`,
    ];
    const limits = [5, 1000, 2, 6, 800, 3];
    const t = Date.now();
    const nows = [t, t + 10, t + 20, t + 60, t + 70, t + 80, t + 130, t + 131];
    const calls = nows.map((now, i) => [now, 150, `lease-${i}`] as const);
    const batch = `${prefix}{acct:batch}:`;
    const single = `${prefix}{acct:single}:`;
    // lease TTL 50 ms: leases taken early in the batch have expired for the later calls
    const head = [50, 1000];
    const batched = await client.modelgateRlAcquire(
      6,
      ...keysOf(batch),
      ...head,
      0,
      ...limits,
      calls.length,
      ...calls.flat(),
    );
    const oneByOne: number[] = [];
    for (const c of calls)
      oneByOne.push(...(await client.modelgateRlAcquire(6, ...keysOf(single), ...head, 0, ...limits, 1, ...c)));
    expect(batched).toEqual(oneByOne);
    expect(batched.filter((_, i) => i % 15 === 0)).toContain(0); // some were refused

    const state = async (tag: string) => {
      const [rpm, tpm, conc, arpm, atpm, aconc] = keysOf(tag);
      return {
        tats: await Promise.all([rpm, tpm, arpm, atpm].map((k) => client.get(k!))),
        leases: await Promise.all([conc, aconc].map((k) => client.zrange(k!, 0, -1, "WITHSCORES"))),
      };
    };
    expect(await state(batch)).toEqual(await state(single));

    // Free them: under and over their estimates, one cancelled (its request given back), in one script call
    // against one per call.
    const ends = calls.map(([, , id], i) => [id, i % 3 === 0 ? -100 : 40, i % 2 === 0 ? -20 : 300, i === 4 ? -1 : 0]);
    const freeKeys = (tag: string) => [
      `${tag}a:tpm`,
      `${tag}a:conc`,
      `${tag}a:rpm`,
      `${tag}k:k:tpm`,
      `${tag}k:k:conc`,
      `${tag}k:k:rpm`,
    ];
    const end = t + 140;
    await client.modelgateRlRelease(6, ...freeKeys(batch), end, 1000, 800, 5, 6, ends.length, ...ends.flat());
    for (const e of ends) await client.modelgateRlRelease(6, ...freeKeys(single), end, 1000, 800, 5, 6, 1, ...e);
    expect(await state(batch)).toEqual(await state(single));
    for (const tag of [batch, single]) expect(await client.zcard(`${tag}k:k:conc`)).toBe(0);
  });
});

describe("RedisRateLimiter top-up", () => {
  const { prefix, clients, replica } = replicas();
  const call = (keyId: string, accountId: string, accountLimits: Partial<RateLimits>, now: number, est: number) => ({
    keyId,
    accountId,
    keyLimits: none,
    accountLimits: { ...none, ...accountLimits },
    estimatedTokens: est,
    now,
  });

  it("lets exactly one of two replicas' top-ups racing for an account's last tokens through, every time", async () => {
    const a = replica(0);
    const b = replica(1);
    const now = Date.now();
    for (let round = 0; round < 20; round++) {
      const accountId = randomUUID();
      const ga = await a.acquire(call("ka", accountId, { tpm: 1000 }, now, 100));
      const gb = await b.acquire(call("kb", accountId, { tpm: 1000 }, now, 100));
      if (!ga.ok || !gb.ok) throw new Error("expected both admitted");
      // on two connections, in the same turn: Redis runs one script, then the other
      const results = await Promise.all([ga.topUp(600, now), gb.topUp(600, now)]);
      expect(results.map((r) => r.ok).sort()).toEqual([false, true]);
      // 700 taken on the account's TPM: the winner's 600 and the loser's 100, nothing of the refused 500
      const tat = Number(await clients[2]!.get(`${prefix}{acct:${accountId}}:a:tpm`));
      expect(tat).toBeCloseTo(now + 700 * 60, 6);
    }
  });

  it("tops up the calls of one account of one turn in one script call (after the turn's first), in arrival order", async () => {
    const l = replica(2, { localFreeShare: 1 });
    const client = clients[2]!;
    const accountId = randomUUID();
    const now = Date.now();
    const grants = [];
    for (const keyId of ["k1", "k2", "k2", "k1"])
      grants.push(await l.acquire(call(keyId, accountId, { tpm: 1000 }, now, 100)));
    const spy = vi.spyOn(client, "modelgateRlTopUp");
    let sent: number[] = [];
    let results;
    try {
      results = await Promise.all(grants.map((g) => (g.ok ? g.topUp(300, now) : null)));
    } finally {
      sent = spy.mock.calls.map((c) => Number(c[0])); // numkeys of each call
      spy.mockRestore();
    }
    // The first goes out at once on its own; the other three in one call, four keys per run of one key (k2, k1).
    expect(sent).toEqual([4, 8]);
    // 400 held, then +200 each: the first three fit (1000), the fourth does not
    expect(results.map((r) => r?.ok)).toEqual([true, true, true, false]);
    const tat = Number(await client.get(`${prefix}{acct:${accountId}}:a:tpm`));
    expect(tat).toBeCloseTo(now + 1000 * 60, 6);
  });

  it("tops up a call admitted locally once Redis has taken it", async () => {
    const l = replica(0);
    const accountId = randomUUID();
    const now = Date.now();
    const first = await l.acquire(call("k", accountId, { tpm: 100_000, concurrency: 50 }, now, 100));
    const second = await l.acquire(call("k", accountId, { tpm: 100_000, concurrency: 50 }, now, 100));
    expect(first.ok && second.ok).toBe(true);
    expect(l.local.granted).toBe(1);
    // in the turn it was granted in, before its acquire reached Redis
    const up = second.ok ? await second.topUp(5_000, now) : null;
    expect(up?.ok && up.info.tokens).toEqual({ limit: 100_000, remaining: 100_000 - 5_100, resetMs: 3_060 });
    if (second.ok) await second.release(5_000, now);
    if (first.ok) await first.release(100, now);
    const seen = await replica(1).acquire(call("k", accountId, { tpm: 100_000 }, now, 0));
    expect(seen.ok && seen.info.tokens?.remaining).toBe(100_000 - 5_100);
  });

  it("top up a batch of calls exactly as one script call per call would, refusing some", async () => {
    replica(0);
    const client = clients[0]!;
    const keysOf = (tag: string, key: string) => [
      `${tag}k:${key}:rpm`,
      `${tag}k:${key}:tpm`,
      `${tag}a:rpm`,
      `${tag}a:tpm`,
    ];
    const t = Date.now();
    const batch = `${prefix}{acct:topup-batch}:`;
    const single = `${prefix}{acct:topup-single}:`;
    // the same state under both tags: some tokens and requests taken already
    for (const tag of [batch, single]) {
      for (const key of ["x", "y"]) {
        await client.set(`${tag}k:${key}:tpm`, String(t + 200 * 60), "PX", 120_000);
        await client.set(`${tag}k:${key}:rpm`, String(t + 6_000), "PX", 120_000);
      }
      await client.set(`${tag}a:tpm`, String(t + 300 * 75), "PX", 120_000);
    }
    // runs: x (three calls), y (two), x again (one); limits key rpm 10, key tpm 1000, account rpm 0, account tpm 800
    const limits = [10, 1000, 0, 800];
    const runs: [string, [number, number, number][]][] = [
      [
        "x",
        [
          [t, 300, 300],
          [t + 10, 400, 400],
          [t + 20, 100, 100],
        ],
      ],
      [
        "y",
        [
          [t + 30, 900, 200],
          [t + 40, 50, 50],
        ],
      ],
      ["x", [[t + 50, 0, 100]]],
    ];
    const keys = runs.flatMap(([key]) => keysOf(batch, key));
    const args = runs.flatMap(([, calls]) => [...limits, calls.length, ...calls.flat()]);
    const batched = await client.modelgateRlTopUp(keys.length, ...keys, ...args);
    const oneByOne: number[] = [];
    for (const [key, calls] of runs)
      for (const c of calls)
        oneByOne.push(...(await client.modelgateRlTopUp(4, ...keysOf(single, key), ...limits, 1, ...c)));
    expect(batched).toEqual(oneByOne);
    const status = batched.filter((_, i) => i % 13 === 0);
    expect(status).toContain(0);
    expect(status).toContain(1);
    const state = (tag: string) => Promise.all([...keysOf(tag, "x"), ...keysOf(tag, "y")].map((k) => client.get(k)));
    expect(await state(batch)).toEqual(await state(single));
  });
});

describe("RedisRateLimiter local admission", () => {
  const { prefix, clients, replica } = replicas();
  const call = (
    keyId: string,
    accountId: string,
    keyLimits: Partial<RateLimits>,
    now = Date.now(),
    estimatedTokens = 0,
  ) => ({
    keyId,
    accountId,
    keyLimits: { ...none, ...keyLimits },
    accountLimits: none,
    estimatedTokens,
    now,
  });

  it("admits a call far from its limits without waiting for Redis, and Redis still takes it", async () => {
    const l = replica(0);
    const ids = [randomUUID(), randomUUID()] as const;
    // One clock for all calls, so nothing refills between them (Redis expires a TAT by its own clock: 1.6 s
    // after the first call at 100 rpm, longer than the pause below).
    const now = Date.now();
    const first = await l.acquire(call(...ids, { rpm: 100, concurrency: 50 }, now));
    expect(first.ok).toBe(true);
    // Redis holds every command for a while: a call decided by Redis would wait for all of it. A bounded negative
    // check: a call decided here answers at once, so the window below fails only if this process stalls that long.
    const PAUSE_MS = 700;
    const NOT_WAITING_MS = 300;
    await clients[1]!.call("CLIENT", "PAUSE", String(PAUSE_MS), "ALL");
    const raced = await Promise.race([
      Promise.resolve(l.acquire(call(...ids, { rpm: 100, concurrency: 50 }, now))).then((r) =>
        r.ok ? "granted" : "refused",
      ),
      new Promise((resolve) => setTimeout(() => resolve("waiting for Redis"), NOT_WAITING_MS)),
    ]);
    expect(raced).toBe("granted");
    expect(l.local.granted).toBe(1);
    // Once Redis resumes it has both calls (the local call goes out when its sync window ends): a fresh replica,
    // with no local view, sees both.
    await eventually(
      () => clients[2]!.zcard(`${prefix}{acct:${ids[1]}}:k:${ids[0]}:conc`),
      (n) => n === 2,
      5_000,
      10,
    );
    const other = replica(2);
    const seen = await other.acquire(call(...ids, { rpm: 100, concurrency: 50 }, now));
    expect(seen.ok && seen.info.requests?.remaining).toBe(97);
    expect(await clients[2]!.zcard(`${prefix}{acct:${ids[1]}}:k:${ids[0]}:conc`)).toBe(3);
  });

  it("leaves the last half of every limit to Redis, which refuses exactly at the limit", async () => {
    const l = replica(0);
    const ids = [randomUUID(), randomUUID()] as const;
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await l.acquire(call(...ids, { rpm: 10 })));
    expect(results.map((r) => r.ok)).toEqual([...Array(10).fill(true), false, false]);
    // the first waits (no answer from Redis yet), then local grants while more than 5 of 10 stay free
    expect(l.local.granted).toBeGreaterThan(0);
    expect(l.local.granted).toBeLessThanOrEqual(4);
    expect(l.local.overrun).toBe(0);
  });

  it("takes a call past the limit when other replicas used it up unseen, counts the overrun, and makes later calls wait for it", async () => {
    const overruns: number[] = [];
    const a = replica(0, { onLocalOverrun: () => overruns.push(1) });
    const b = replica(1);
    const ids = [randomUUID(), randomUUID()] as const;
    const now = Date.now();
    expect((await a.acquire(call(...ids, { rpm: 10 }, now))).ok).toBe(true); // a's view: 9 free
    for (let i = 0; i < 9; i++) expect((await b.acquire(call(...ids, { rpm: 10 }, now))).ok).toBe(true);
    const late = await a.acquire(call(...ids, { rpm: 10 }, now)); // a still believes 9 are free
    expect(late.ok).toBe(true);
    if (late.ok) await late.release(0); // waits until Redis has taken it
    expect(a.local).toEqual({ granted: 1, overrun: 1 });
    expect(overruns).toEqual([1]);
    // 11 taken against 10 a minute: the next call waits one interval (6 s) longer than it otherwise would
    const refused = await b.acquire(call(...ids, { rpm: 10 }, now + 1_000));
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.retryAfterMs).toBe(11_000);
  });

  it("frees a locally admitted call only after Redis took it, and gives a cancelled one back", async () => {
    const l = replica(0);
    const ids = [randomUUID(), randomUUID()] as const;
    const limits = { rpm: 100, tpm: 100_000, concurrency: 20 };
    const now = Date.now();
    const first = await l.acquire(call(...ids, limits, now, 100));
    const second = await l.acquire(call(...ids, limits, now, 100));
    expect(l.local.granted).toBe(1);
    // cancelled in the same turn it was granted in, before its acquire reached Redis
    if (second.ok) await second.cancel(now);
    if (first.ok) await first.release(100, now);
    const fresh = replica(2);
    const after = await fresh.acquire(call(...ids, limits, now, 100));
    expect(after.ok && after.info.requests?.remaining).toBe(98); // the first call and this one
    expect(after.ok && after.info.tokens?.remaining).toBe(100_000 - 200);
    expect(await clients[2]!.zcard(`${prefix}{acct:${ids[1]}}:k:${ids[0]}:conc`)).toBe(1); // only this one's slot
  });

  it("waits for Redis on every call when local admission is off", async () => {
    const l = replica(0, { localFreeShare: 1 });
    const ids = [randomUUID(), randomUUID()] as const;
    for (let i = 0; i < 5; i++) expect((await l.acquire(call(...ids, { rpm: 1000 }))).ok).toBe(true);
    expect(l.local.granted).toBe(0);
  });
});
