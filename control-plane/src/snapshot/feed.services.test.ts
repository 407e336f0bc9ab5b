import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisNames, shardOf, SnapshotStore, versionOf } from "@modelgate/data-plane";
import { RedisPolicySource } from "../../../data-plane/src/snapshot/redis-feed.ts";
import { freshDatabase } from "../../../test/helpers/postgres.ts";
import { SnapshotPublisher } from "./publisher.ts";
import { RedisPolicyBus } from "./redis-bus.ts";

// The policy feed end to end in one process: Postgres triggers → the publisher's change reads → Redis → a
// replica's store. Every step is awaited (flush, sync), so nothing here depends on timing.

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
let db: Awaited<ReturnType<typeof freshDatabase>>;
let redis: Redis;
let sub: Redis;
const names = redisNames(`mgtest:feed:${randomBytes(4).toString("hex")}:`);
let publisher: SnapshotPublisher;
let store: SnapshotStore;
let source: RedisPolicySource;
let accountId: string;

const sql = <T = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  db.db.sql.transaction((tx) => tx.query<T>(text, params));
const hashOf = (v: string) => createHash("sha256").update(v).digest("hex");
async function newKey(name: string): Promise<string> {
  const hash = hashOf(`${name}-${randomBytes(4).toString("hex")}`);
  await sql(
    `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at) VALUES (gen_random_uuid(), $1, $2, $3, 'sk', '{}', '{}', now())`,
    [accountId, name, hash],
  );
  return hash;
}
const publish = async () => {
  publisher.changed();
  await publisher.flush();
  await source.sync();
};
const streamLength = async () => {
  const epoch = await redis.hget(names.policyMeta, "epoch");
  return redis.xlen(names.policyStream(epoch!));
};

beforeAll(async () => {
  db = await freshDatabase("feed");
  redis = new Redis(REDIS_URL);
  sub = new Redis(REDIS_URL);
  const [row] = await sql<{ id: string }>(
    `INSERT INTO accounts (id, name, balance_micro, updated_at) VALUES (gen_random_uuid(), 'acme', 1000, now()) RETURNING id::text`,
  );
  accountId = row!.id;
  await newKey("before-start");
  publisher = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
    throw err;
  });
  await publisher.start();
  store = new SnapshotStore();
  // not started (no subscription, no polling): each test says when the replica syncs
  source = new RedisPolicySource(redis, sub, store, names, 3_600_000, (err) => {
    throw err;
  });
  await source.sync();
});

afterAll(async () => {
  await source?.stop();
  publisher?.stop();
  const keys = await redis.keys(`${names.prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis?.disconnect();
  sub?.disconnect();
  await db?.drop();
});

describe("policy feed", () => {
  it("starts with a full publication and a full load", async () => {
    expect(publisher.fullPublications).toBe(1);
    expect(store.fullLoads).toBe(1);
    expect(store.size).toMatchObject({ keys: 1, accounts: 1 });
    expect(store.account(accountId)?.balance).toBe("1000");
    expect(Object.keys(store.current.models).length).toBe(0);
  });

  it("carries a created and a revoked key as one change each, without a full load", async () => {
    const before = await streamLength();
    const hash = await newKey("created");
    await publish();
    expect(store.key(hash)?.status).toBe("active");
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [hash]);
    await publish();
    expect(store.key(hash)?.status).toBe("revoked");
    expect(await streamLength()).toBe(before + 2);
    expect(store.fullLoads).toBe(1);
    expect(publisher.fullPublications).toBe(1);
  });

  it("publishes a settlement's account and key figures as changes of those entities only", async () => {
    const hash = await newKey("spender");
    await publish();
    const before = await streamLength();
    const [k] = await sql<{ id: string }>(`SELECT id::text FROM api_keys WHERE key_hash = $1`, [hash]);
    await db.db.sql.transaction(async (tx) => {
      await tx.query(
        `UPDATE accounts SET balance_micro = balance_micro - 1000, spent_micro = spent_micro + 1000 WHERE id = $1::uuid`,
        [accountId],
      );
      await tx.query(`UPDATE api_keys SET spent_micro = spent_micro + 1000 WHERE id = $1::uuid`, [k!.id]);
    });
    await publish();
    expect(await streamLength()).toBe(before + 2);
    expect(store.account(accountId)).toMatchObject({ balance: "0", spent: "1000" });
    expect(store.key(hash)?.spent).toBe("1000");
  });

  it("publishes a change from a transaction that committed after a later one was published", async () => {
    const slow = await newKey("slow");
    const fast = await newKey("fast");
    await publish();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query(`UPDATE api_keys SET name = 'slow-renamed' WHERE key_hash = $1`, [slow]);
      await sql(`UPDATE api_keys SET name = 'fast-renamed' WHERE key_hash = $1`, [fast]);
      await publish();
      expect(store.key(fast)?.name).toBe("fast-renamed");
      expect(store.key(slow)?.name).toBe("slow");
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
    await publish();
    expect(store.key(slow)?.name).toBe("slow-renamed");
  });

  it("a revocation that lands while a replica loads in full is applied at once, and the load does not undo it", async () => {
    const hash = await newKey("revoked-mid-load");
    await publish();
    const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
    const held = names.policyShard(epoch, "key", shardOf(hash));
    // A second replica starting up: its load reads the key's shard (the key still active) and is held there,
    // before it puts what it read, until the revocation has landed.
    let reached!: () => void;
    const atShard = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const gated = new Proxy(redis, {
      get(target, prop) {
        if (prop === "hscanBuffer")
          return async (key: string, ...rest: [string, "COUNT", number]) => {
            const reply = await target.hscanBuffer(key, ...rest);
            if (key === held) {
              reached();
              await gate;
            }
            return reply;
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const replica = new SnapshotStore();
    const follower = new RedisPolicySource(gated, sub, replica, names, 3_600_000, (err) => {
      throw err;
    });
    const loaded = follower.sync();
    await atShard;
    expect(replica.loading).toBe(true);
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [hash]);
    publisher.changed();
    await publisher.flush();
    await follower.follow();
    expect(replica.loading).toBe(true);
    expect(replica.key(hash)?.status).toBe("revoked");
    release();
    await loaded;
    expect(replica.fullLoads).toBe(1);
    expect(replica.key(hash)?.status).toBe("revoked");
    expect(replica.size.keys).toBe(store.size.keys);
    await follower.stop();
  });

  it("a deleted key is forgotten", async () => {
    const hash = await newKey("deleted");
    await publish();
    expect(store.key(hash)).toBeDefined();
    await sql(`DELETE FROM api_keys WHERE key_hash = $1`, [hash]);
    await publish();
    expect(store.key(hash)).toBeUndefined();
  });

  it("sees a gap (changes trimmed from the stream) and loads in full", async () => {
    const missed = await newKey("missed-1");
    const alsoMissed = await newKey("missed-2");
    publisher.changed();
    await publisher.flush();
    // Trim the stream past the replica's position, as a long disconnect under heavy change would.
    const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
    await redis.xtrim(names.policyStream(epoch), "MAXLEN", 0);
    const removed = await newKey("removed-while-away");
    publisher.changed();
    await publisher.flush();
    await sql(`DELETE FROM api_keys WHERE key_hash = $1`, [removed]);
    await publish();
    expect(store.fullLoads).toBe(2);
    expect(store.key(missed)).toBeDefined();
    expect(store.key(alsoMissed)).toBeDefined();
    expect(store.key(removed)).toBeUndefined();
    // and follows changes again afterwards
    const after = await newKey("after-gap");
    await publish();
    expect(store.key(after)).toBeDefined();
    expect(store.fullLoads).toBe(2);
  });

  it("paces a reload while serving (one piece in flight, then a pause as long as it took); the first load runs flat out", async () => {
    // Every HSCAN the replica sends, timed, and how many were in flight at once.
    let inFlight = 0;
    let most = 0;
    let pieces: { start: number; end: number }[] = [];
    const counted = new Proxy(redis, {
      get(target, prop) {
        if (prop === "hscanBuffer")
          return async (key: string, ...rest: [string, "COUNT", number]) => {
            const start = performance.now();
            most = Math.max(most, ++inFlight);
            try {
              return await target.hscanBuffer(key, ...rest);
            } finally {
              inFlight--;
              pieces.push({ start, end: performance.now() });
            }
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const replica = new SnapshotStore();
    const follower = new RedisPolicySource(counted, sub, replica, names, 3_600_000, (err) => {
      throw err;
    });
    await follower.sync();
    expect(replica.fullLoads).toBe(1);
    expect(most).toBeGreaterThan(1); // the start-up load: several pieces in flight

    // A change the follower has not read, then the stream trimmed past its position (the other store is at
    // the head, so only the follower sees a gap): it reloads in full while it serves.
    const added = await newKey("added-during-gap");
    await publish();
    const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
    await redis.xtrim(names.policyStream(epoch), "MAXLEN", 0);
    most = 0;
    pieces = [];
    await follower.sync();
    expect(replica.fullLoads).toBe(2);
    expect(replica.key(added)).toBeDefined();
    expect(most).toBe(1);
    pieces.sort((a, b) => a.start - b.start);
    expect(pieces.length).toBeGreaterThan(100);
    // After each piece the next waits at least as long as the piece took (timers never fire early; 1 ms slack
    // for timer granularity).
    for (let i = 0; i + 1 < pieces.length; i++)
      expect(pieces[i + 1]!.start - pieces[i]!.end).toBeGreaterThanOrEqual(pieces[i]!.end - pieces[i]!.start - 1);
    await follower.stop();
  });

  it("publishes in full when Redis lost the feed, and the replica loads the new epoch", async () => {
    const before = await redis.hget(names.policyMeta, "epoch");
    await redis.del(names.policyMeta);
    const hash = await newKey("after-loss");
    await publish();
    expect(publisher.fullPublications).toBe(2);
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(before);
    expect(store.fullLoads).toBe(3);
    expect(store.key(hash)).toBeDefined();
  });

  it("publishes in full when more changed at once than it appends, and lets the old epoch expire", async () => {
    const small = new SnapshotPublisher(
      db.db,
      new RedisPolicyBus(redis, names),
      1,
      (err) => {
        throw err;
      },
      { maxChanges: 2 },
    );
    const before = (await redis.hget(names.policyMeta, "epoch"))!;
    const hashes = [await newKey("bulk-1"), await newKey("bulk-2"), await newKey("bulk-3")];
    small.changed();
    await small.flush();
    await source.sync();
    expect(small.fullPublications).toBe(1);
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(before);
    expect(await redis.ttl(names.policyCatalog(before))).toBeGreaterThan(0);
    expect(store.fullLoads).toBe(4);
    for (const h of hashes) expect(store.key(h)).toBeDefined();
  });

  it("a stale publisher (behind the head) does not append", async () => {
    const bus = new RedisPolicyBus(redis, names);
    const head = (await bus.head())!;
    expect(await bus.append({ ...head, cursor: "1:1:" }, [], head.cursor, 0)).toBe(false);
    expect(await bus.append(head, [], head.cursor, 0)).toBe(true);
  });
  it("a change already in its shard whose stream entry is not appended yet when a replica loads in full: the replica keeps the newest version and never goes back", async () => {
    const hash = await newKey("early");
    await publish();
    const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
    const shardKey = names.policyShard(epoch, "key", shardOf(hash));
    const older = (await redis.hget(shardKey, hash))!;
    // A second control plane whose step 2 (the `{ctl}` script: stream entries and head) is held, once armed,
    // after its step 1 (the shard writes) is done.
    let hold = false;
    let reached!: () => void;
    const atAppend = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = new Proxy(redis, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === "policyAppend" && hold)
          return async (...args: string[]) => {
            reached();
            await gate;
            return (v as (...a: string[]) => Promise<unknown>).apply(target, args);
          };
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const second = new SnapshotPublisher(db.db, new RedisPolicyBus(held, names), 1, (err) => {
      throw err;
    });
    await second.start();
    hold = true;
    await sql(`UPDATE api_keys SET name = 'early-renamed' WHERE key_hash = $1`, [hash]);
    second.changed();
    const flushed = second.flush();
    await atAppend;
    const newer = (await redis.hget(shardKey, hash))!;
    expect(newer).toContain('"name":"early-renamed"');
    expect(versionOf(newer)).toBeGreaterThan(versionOf(older));

    // A replica starting now reads the head (no entry for the rename yet) and then the shard (the rename).
    const replica = new SnapshotStore();
    const follower = new RedisPolicySource(redis, sub, replica, names, 3_600_000, (err) => {
      throw err;
    });
    await follower.sync();
    expect(replica.fullLoads).toBe(1);
    expect(replica.key(hash)?.name).toBe("early-renamed");
    await source.sync();
    expect(store.key(hash)?.name).toBe("early");

    // The stream entry lands: the same version, in seq order (no gap, no second load); the other replica gets it.
    release();
    await flushed;
    await follower.sync();
    expect(replica.key(hash)?.name).toBe("early-renamed");
    expect(replica.fullLoads).toBe(1);
    await source.sync();
    expect(store.key(hash)?.name).toBe("early-renamed");

    // A late entry with the older version (appended, since step 2 always appends) changes neither the shard
    // nor a replica.
    const bus = new RedisPolicyBus(redis, names);
    const head = (await bus.head())!;
    expect(await bus.append(head, [{ kind: "key", id: hash, v: versionOf(older), json: older }], head.cursor, 0)).toBe(
      true,
    );
    expect(await redis.hget(shardKey, hash)).toBe(newer);
    await follower.sync();
    await source.sync();
    expect(replica.key(hash)?.name).toBe("early-renamed");
    expect(store.key(hash)?.name).toBe("early-renamed");
    expect(replica.fullLoads).toBe(1);
    second.stop();
    await follower.stop();
  });

  it("a stale publisher cannot write a deleted key back into its shard (the deletion stays as a tombstone)", async () => {
    const hash = await newKey("deleted-then-stale");
    await publish();
    const bus = new RedisPolicyBus(redis, names);
    const stale = (await bus.head())!;
    const shardKey = names.policyShard(stale.epoch, "key", shardOf(hash));
    const alive = (await redis.hget(shardKey, hash))!;
    await sql(`DELETE FROM api_keys WHERE key_hash = $1`, [hash]);
    await publish();
    expect(store.key(hash)).toBeUndefined();
    const tombstone = (await redis.hget(shardKey, hash))!;
    expect(tombstone).toMatch(/^\{"v":\d+\}$/);
    expect(versionOf(tombstone)).toBeGreaterThan(versionOf(alive));
    // A control plane that read the key before its deletion appends it now: refused (the head moved on), and
    // its shard write (step 1, before the head is checked) did not undo the deletion.
    const change = { kind: "key" as const, id: hash, v: versionOf(alive), json: alive };
    expect(await bus.append(stale, [change], "1:1:", versionOf(alive))).toBe(false);
    expect(await redis.hget(shardKey, hash)).toBe(tombstone);
    const replica = new SnapshotStore();
    const follower = new RedisPolicySource(redis, sub, replica, names, 3_600_000, (err) => {
      throw err;
    });
    await follower.sync();
    expect(replica.key(hash)).toBeUndefined();
    expect(replica.size.keys).toBe(store.size.keys);
    await follower.stop();
  });

  it("after an upgrade, publishes in full under the new names and lets the older release's feed expire", async () => {
    // What a release before the shards had hash tags of their own left: its head and its epoch, all in `{ctl}`.
    const legacyHead = `${names.prefix}{ctl}:policy:meta`;
    const legacyShard = `${names.prefix}{ctl}:policy:0ld:k:7`;
    await redis.hset(legacyHead, { epoch: "0ld", cursor: "1:1:", seq: 0, lastId: "0-0", version: 1, at: 1 });
    await redis.hset(legacyShard, "x", '{"v":1}');
    await redis.del(names.policyMeta);
    const full = publisher.fullPublications;
    const hash = await newKey("after-upgrade");
    await publish();
    expect(publisher.fullPublications).toBe(full + 1);
    expect(store.key(hash)).toBeDefined();
    expect(await redis.ttl(legacyHead)).toBeGreaterThan(0);
    expect(await redis.ttl(legacyShard)).toBeGreaterThan(0);
  });
});
