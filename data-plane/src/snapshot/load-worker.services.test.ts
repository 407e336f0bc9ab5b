import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entityJson, redisNames, shardOf } from "../contract/index.ts";
import { dropPrefix, TEST_REDIS_URL } from "../redis/test-fixture.ts";
import { RedisPolicySource } from "./redis-feed.ts";
import { SnapshotStore } from "./store.ts";
import { testAccount, testKey } from "./test-fixture.ts";

// A replica's full load on the load worker (load-worker.ts) against a real Redis: the feed is written here by
// hand (head, shard hashes, stream entries, as control-plane/src/snapshot/redis-bus.ts writes them), so each
// test says exactly what the worker reads. Loads that must still be running when something happens mid-way
// are paced reloads (PACE: a pause 10 times as long as each piece took), which take seconds over 512 shards.

const PACE = 10;
/** this run's feeds (dropped at the end): another run of the suite on the same Redis keeps its own */
const RUN_PREFIX = `mgtest:loadworker:${randomBytes(4).toString("hex")}:`;
let redis: Redis;
let sub: Redis;
const sources: RedisPolicySource[] = [];

/** A feed under a prefix of its own: `keys` keys over `keys / 10` accounts in epoch `epoch`, all at version 10. */
async function writeFeed(epoch: string, keys: number, tag = epoch) {
  const names = redisNames(`${RUN_PREFIX}${randomBytes(4).toString("hex")}:`);
  const feed = { names, keyIds: [] as string[], accountIds: [] as string[] };
  const pipe = redis.pipeline();
  for (let a = 0; a < Math.max(1, keys / 10); a++) {
    const id = `${tag}-account-${a}`;
    feed.accountIds.push(id);
    pipe.hset(
      names.policyShard(epoch, "account", shardOf(id)),
      id,
      entityJson(10, testAccount({ id, name: `acct-${id}` })),
    );
  }
  for (let k = 0; k < keys; k++) {
    const id = `${tag}-key-${k}`;
    feed.keyIds.push(id);
    const json = entityJson(10, testKey({ id: `kid-${k}`, accountId: feed.accountIds[k % feed.accountIds.length]! }));
    pipe.hset(names.policyShard(epoch, "key", shardOf(id)), id, json);
  }
  await pipe.exec();
  await redis.hset(names.policyMeta, { epoch, seq: 0, lastId: "0-0", version: 10, at: Date.now() });
  return feed;
}

function follower(
  names: ReturnType<typeof redisNames>,
  store: SnapshotStore,
  opts: {
    loadIn?: "worker" | "thread";
    onError?: (err: unknown) => void;
    workerIdleMs?: number;
    workerNice?: number;
  } = {},
) {
  const source = new RedisPolicySource(
    redis,
    sub,
    store,
    names,
    3_600_000,
    opts.onError ??
      ((err) => {
        throw err;
      }),
    {
      paceRatio: PACE,
      loadIn: opts.loadIn ?? "worker",
      // (the tests hold on to the worker between loads; only the idle test lets it end)
      workerIdleMs: opts.workerIdleMs ?? 60_000,
      ...(opts.workerNice === undefined ? {} : { workerNice: opts.workerNice }),
    },
  );
  sources.push(source);
  return source;
}

/** A follower whose errors are recorded; `failure` resolves at the first. */
function failingFollower(names: ReturnType<typeof redisNames>, store: SnapshotStore) {
  const errors: unknown[] = [];
  let failed!: () => void;
  const failure = new Promise<void>((r) => (failed = r));
  const source = follower(names, store, {
    onError: (err) => {
      errors.push(err);
      failed();
    },
  });
  return { source, errors, failure };
}

/** Moves the head past what the stream holds (as after a long disconnect): the follower's next pass reloads. */
const gap = (names: ReturnType<typeof redisNames>) => redis.hincrby(names.policyMeta, "seq", 5);

/** Appends one change to the epoch's stream and moves the head (the control plane's step 2). */
async function append(
  names: ReturnType<typeof redisNames>,
  epoch: string,
  kind: string,
  id: string,
  v: number,
  d: string,
) {
  const seq = Number(await redis.hget(names.policyMeta, "seq")) + 1;
  const lastId = await redis.xadd(names.policyStream(epoch), "*", "s", seq, "k", kind, "i", id, "v", v, "d", d);
  await redis.hset(names.policyMeta, { seq, lastId: lastId!, version: v });
}

beforeAll(() => {
  redis = new Redis(TEST_REDIS_URL);
  sub = new Redis(TEST_REDIS_URL);
});

afterAll(async () => {
  for (const s of sources) await s.stop();
  await dropPrefix(redis, RUN_PREFIX);
  redis.disconnect();
  sub.disconnect();
});

describe("full load on the load worker", () => {
  it("holds what a load on the main thread holds: keys, accounts, money fields; tombstones left out", async () => {
    const feed = await writeFeed("e1", 3_000);
    const { names } = feed;
    // A deleted key (a tombstone), and a money field newer than its key's own figures.
    const deleted = feed.keyIds[7]!;
    await redis.hset(names.policyShard("e1", "key", shardOf(deleted)), deleted, '{"v":12}');
    const paid = feed.keyIds[8]!;
    await redis.hset(names.policyShard("e1", "key", shardOf(paid)), `$${paid}`, JSON.stringify({ v: 11, spent: "42" }));
    const funded = feed.accountIds[3]!;
    await redis.hset(
      names.policyShard("e1", "account", shardOf(funded)),
      `$${funded}`,
      JSON.stringify({ v: 11, balance: "7", spent: "993" }),
    );

    const viaWorker = new SnapshotStore();
    const viaThread = new SnapshotStore();
    await follower(names, viaWorker).sync();
    await follower(names, viaThread, { loadIn: "thread" }).sync();

    expect(viaWorker.fullLoads).toBe(1);
    expect(viaWorker.size).toEqual({ keys: 2_999, accounts: 300, models: 0 });
    expect(viaWorker.size).toEqual(viaThread.size);
    for (const id of feed.keyIds) expect(viaWorker.key(id)).toEqual(viaThread.key(id));
    for (const id of feed.accountIds) expect(viaWorker.account(id)).toEqual(viaThread.account(id));
    expect(viaWorker.key(feed.keyIds[0]!)?.accountId).toBe(feed.accountIds[0]);
    expect(viaWorker.key(deleted)).toBeUndefined();
    expect(viaWorker.key(paid)?.spent).toBe("42");
    expect(viaWorker.account(funded)).toMatchObject({ balance: "7", spent: "993" });
  });

  it("a change applied while the worker loads wins over the older version the load read", async () => {
    const feed = await writeFeed("e1", 2_000);
    const { names } = feed;
    const store = new SnapshotStore();
    const source = follower(names, store);
    await source.sync();
    // The key the load reads last (the last key shard) is renamed in the stream only, as if the load had read
    // its shard before the control plane wrote the change there.
    const id =
      feed.keyIds.find((k) => shardOf(k) === 255) ?? feed.keyIds.reduce((a, b) => (shardOf(b) > shardOf(a) ? b : a));
    await gap(names);
    const reload = source.sync();
    await source.follow(); // the pass that saw the gap has started the reload; this one finds nothing new yet
    expect(store.loading).toBe(true);
    await append(names, "e1", "key", id, 20, entityJson(20, testKey({ id: "renamed", name: "renamed" })));
    await source.follow();
    expect(store.loading).toBe(true);
    expect(store.key(id)?.name).toBe("renamed");
    await reload;
    expect(store.fullLoads).toBe(2);
    expect(store.key(id)?.name).toBe("renamed");
    expect(store.size.keys).toBe(2_000);
  });

  it("a new epoch cancels the load in progress: only the new epoch's load completes", async () => {
    const feed = await writeFeed("e1", 2_000);
    const { names } = feed;
    const store = new SnapshotStore();
    const source = follower(names, store);
    await source.sync();
    await gap(names);
    const thread = source.loadThread!;
    // Every shard the worker posts as complete, counted per load (the e1 reload's id is the first seen).
    const complete = new Map<number, number>();
    thread.on("message", (m: { type: string; id: number; complete?: boolean }) => {
      if (m.type === "shard" && m.complete) complete.set(m.id, (complete.get(m.id) ?? 0) + 1);
    });
    const firstShard = once(thread, "message");
    void source.follow();
    const [first] = (await firstShard) as [{ id: number }]; // the e1 reload is running on the worker
    // The control plane starts epoch e2 (another set of keys) while the e1 reload runs.
    const e2Key = "e2-only-key";
    await redis.hset(names.policyShard("e2", "key", shardOf(e2Key)), e2Key, entityJson(30, testKey({ id: "e2" })));
    await redis.hset(names.policyMeta, { epoch: "e2", seq: 0, lastId: "0-0", version: 30, at: Date.now() });
    await source.sync();
    expect(store.fullLoads).toBe(2);
    expect(store.loading).toBe(false);
    expect(store.key(e2Key)?.id).toBe("e2");
    expect(store.size.keys).toBe(1);
    // The e1 reload stopped short (it would have posted all 512 shards), and the same worker served both loads.
    expect(complete.get(first.id)).toBeLessThan(512);
    expect(complete.get(first.id + 1)).toBe(512);
    expect(source.loadThread).toBe(thread);
  });

  it("stop() ends the worker, mid-load too, and the store keeps what it held", async () => {
    const feed = await writeFeed("e1", 2_000);
    const { names } = feed;
    const store = new SnapshotStore();
    const source = follower(names, store);
    await source.sync();
    const thread = source.loadThread!;
    expect(thread).not.toBeNull();
    await gap(names);
    const firstShard = once(thread, "message");
    const reload = source.sync();
    await firstShard;
    const exited = once(thread, "exit");
    await source.stop();
    await exited;
    await reload;
    expect(source.loadThread).toBeNull();
    expect(store.loading).toBe(false);
    expect(store.fullLoads).toBe(1);
    expect(store.size.keys).toBe(2_000);
    for (const id of feed.keyIds.slice(0, 50)) expect(store.key(id)).toBeDefined();
  });

  it("a worker that dies mid-load is reported, the previous state keeps serving, and the next pass reloads", async () => {
    const feed = await writeFeed("e1", 2_000);
    const { names } = feed;
    const store = new SnapshotStore();
    const { source, errors, failure } = failingFollower(names, store);
    await source.sync();
    const thread = source.loadThread!;
    // A key added while the replica is away (its stream entry trimmed): only a full load brings it.
    const added = "added-while-away";
    await redis.hset(names.policyShard("e1", "key", shardOf(added)), added, entityJson(15, testKey({ id: "new" })));
    await gap(names);
    const firstShard = once(thread, "message");
    void source.follow();
    await firstShard;
    await thread.terminate();
    await failure;
    expect(String(errors[0])).toMatch(/policy load worker exited/);
    expect(store.loading).toBe(false);
    expect(store.fullLoads).toBe(1);
    expect(store.size.keys).toBe(2_000);
    for (const id of feed.keyIds.slice(0, 50)) expect(store.key(id)).toBeDefined();

    // The next pass loads again, on a new worker.
    await source.sync();
    expect(store.fullLoads).toBe(2);
    expect(source.loadThread).not.toBe(thread);
    expect(store.key(added)?.id).toBe("new");
    expect(store.size.keys).toBe(2_001);
  });

  it("a Redis error on the worker's connection fails the load; the previous state keeps serving", async () => {
    const feed = await writeFeed("e1", 500);
    const { names } = feed;
    const store = new SnapshotStore();
    const { source, errors, failure } = failingFollower(names, store);
    await source.sync();
    // A shard key that is not a hash: HSCAN on it fails (WRONGTYPE) on the worker.
    const broken = names.policyShard("e1", "key", 200);
    const saved = await redis.hgetall(broken);
    await redis.del(broken);
    await redis.set(broken, "not a hash");
    await gap(names);
    void source.follow();
    await failure;
    expect(String(errors[0])).toMatch(/WRONGTYPE/);
    expect(store.loading).toBe(false);
    expect(store.fullLoads).toBe(1);
    expect(store.size.keys).toBe(500);
    // Repaired: the next pass loads in full.
    await redis.del(broken);
    if (Object.keys(saved).length > 0) await redis.hset(broken, saved);
    await source.sync();
    expect(store.fullLoads).toBe(2);
    expect(store.size.keys).toBe(500);
  });

  it("Redis losing its data mid-load: the shards read after the loss are not swapped in empty, the replica keeps what it held", async () => {
    // On the worker: the loss comes once the reload posted its first shard.
    const feed = await writeFeed("e1", 2_000);
    const store = new SnapshotStore();
    const source = follower(feed.names, store);
    await source.sync();
    await gap(feed.names);
    const firstShard = once(source.loadThread!, "message");
    const reload = source.sync();
    await firstShard;
    await dropPrefix(redis, feed.names.prefix);
    await reload;
    // On the main thread: the loss comes before the reload's 20th HSCAN.
    const other = await writeFeed("e1", 2_000);
    const local = new SnapshotStore();
    let scans = 0;
    const lossy = new Proxy(redis, {
      get(target, prop, receiver) {
        if (prop !== "hscanBuffer") return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<Redis["hscanBuffer"]>) => {
          if (local.fullLoads > 0 && ++scans === 20) await dropPrefix(redis, other.names.prefix);
          return target.hscanBuffer(...args);
        };
      },
    });
    const onMain = new RedisPolicySource(
      lossy,
      sub,
      local,
      other.names,
      3_600_000,
      (err) => {
        throw err;
      },
      { paceRatio: PACE, loadIn: "thread" },
    );
    sources.push(onMain);
    await onMain.sync();
    await gap(other.names);
    await onMain.sync();
    expect(scans).toBeGreaterThanOrEqual(20);
    for (const [s, f] of [
      [store, feed],
      [local, other],
    ] as const) {
      expect(s.fullLoads).toBe(1);
      expect(s.loading).toBe(false);
      // Every key is still known: the shards scanned after the loss (empty) were not swapped in.
      expect(s.size.keys).toBe(2_000);
      for (const id of f.keyIds) expect(s.key(id)).toBeDefined();
    }
  });

  it("the worker ends once idle for workerIdleMs; the next load starts a new one", async () => {
    const feed = await writeFeed("e1", 200);
    const { names } = feed;
    const store = new SnapshotStore();
    const source = follower(names, store, { workerIdleMs: 100 });
    await source.sync();
    const first = source.loadThread!;
    expect(first).not.toBeNull();
    await once(first, "exit");
    expect(source.loadThread).toBeNull();
    await gap(names);
    await source.sync();
    expect(store.fullLoads).toBe(2);
    expect(store.size.keys).toBe(200);
    expect(source.loadThread).not.toBe(first);
    expect(source.loadThread).not.toBeNull();
  });

  it("the worker thread runs at the nice value asked for, the replica's own threads as they were", async () => {
    const niceOf = (task: string) =>
      Number(readFileSync(`/proc/self/task/${task}/stat`, "utf8").split(") ")[1]!.split(" ")[16]);
    const before = readdirSync("/proc/self/task").filter((t) => niceOf(t) === 7);
    const feed = await writeFeed("e1", 50);
    const source = follower(feed.names, new SnapshotStore(), { workerNice: 7 });
    await source.sync();
    const reniced = readdirSync("/proc/self/task").filter((t) => niceOf(t) === 7);
    expect(before).toEqual([]);
    expect(reniced).toHaveLength(1);
    expect(niceOf(String(process.pid))).toBe(0);
  });
});
