import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import {
  type PolicyChange,
  POLICY_SHARDS,
  redisNames,
  shardOf,
  SnapshotStore,
  type UsageEvent,
  versionOf,
} from "@modelgate/data-plane";
import { checkKeyPolicy } from "../../../data-plane/src/policy/check.ts";
import { RedisPolicySource } from "../../../data-plane/src/snapshot/redis-feed.ts";
import { freshDatabase } from "../../../test/helpers/postgres.ts";
import { eventually } from "../../../test/helpers/processes.ts";
import { SnapshotPublisher } from "./publisher.ts";
import { settleUsageBatch } from "../usage/settle.ts";
import { InProcessPolicyBus } from "./memory-bus.ts";
import { fullLease, RedisPolicyBus } from "./redis-bus.ts";
import { recordFeedPosition } from "./feed-position.ts";

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
/** A replica following this suite's feed (no timer: the tests drive it with sync); its errors fail the test. */
const replicaOf = (store: SnapshotStore) =>
  new RedisPolicySource(redis, sub, store, names, 3_600_000, (err) => {
    throw err;
  });
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
/** `n` keys inserted in one statement (one transaction: one bulk change), named `<tag>-<i>`; their hashes. */
async function bulkKeys(tag: string, n: number): Promise<string[]> {
  const rows = await sql<{ key_hash: string }>(
    `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at)
     SELECT gen_random_uuid(), $1::uuid, $2 || '-' || i, md5($2 || i || $3) || md5($3 || i), 'sk', '{}', '{}', now()
     FROM generate_series(1, $4::int) i RETURNING key_hash`,
    [accountId, tag, randomBytes(4).toString("hex"), n],
  );
  return rows.map((r) => r.key_hash);
}
const streamLength = async () => {
  const epoch = await redis.hget(names.policyMeta, "epoch");
  return redis.xlen(names.policyStream(epoch!));
};
/** The current epoch's stream entries after the first `skip`, in order, as their fields. */
const streamEntries = async (skip = 0) => {
  const epoch = await redis.hget(names.policyMeta, "epoch");
  const all = await redis.xrange(names.policyStream(epoch!), "-", "+");
  return all.slice(skip).map(([, f]) => {
    const o: Record<string, string> = {};
    for (let i = 0; i + 1 < f.length; i += 2) o[f[i]!] = f[i + 1]!;
    return o as { s: string; k: string; i: string; v: string; d: string };
  });
};
/** A field of the current epoch's shard of a key or account (`$<id>`: its money field). */
const shardField = async (kind: "key" | "account", field: string) => {
  const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
  return redis.hget(names.policyShard(epoch, kind, shardOf(field.replace(/^\$/, ""))), field);
};
const keyIdOf = async (hash: string) =>
  (await sql<{ id: string }>(`SELECT id::text FROM api_keys WHERE key_hash = $1`, [hash]))[0]!.id;
const usage = (keyId: string, cost: number): UsageEvent => ({
  requestId: `req_${randomBytes(8).toString("hex")}`,
  keyId,
  accountId,
  model: "m",
  protocol: "openai",
  upstream: "u",
  stream: false,
  promptTokens: 1,
  completionTokens: 1,
  reasoningTokens: 0,
  cachedTokens: 0,
  cost: String(cost),
  status: 200,
  errorCode: null,
  latencyMs: 1,
  ttftMs: 1,
  clientIp: null,
  startedAt: new Date().toISOString(),
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
  prices: null,
  estimated: false,
  endUser: null,
  tags: [],
});

/**
 * A control plane (pages of 2) whose full publication is held before the page `hold` picks (counted from 1
 * across its publications) until `release()`; `atPage` resolves when it is held.
 */
function heldPublisher(
  hold: (page: number) => boolean,
  onError: (err: unknown) => void = (err) => {
    throw err;
  },
  busOpts: ConstructorParameters<typeof RedisPolicyBus>[2] = {},
) {
  let pages = 0;
  let reached!: () => void;
  const atPage = new Promise<void>((r) => (reached = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const cp = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names, busOpts), 1, onError, {
    pageSize: 2,
    beforeFullPage: async () => {
      if (!hold(++pages)) return;
      reached();
      await gate;
    },
  });
  return { cp, atPage, release, pages: () => pages };
}

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
  source = replicaOf(store);
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

  it("publishes a settlement as money changes of its key and account (their figures alone, not the entities), which the replica patches in place and checks calls against", async () => {
    const hash = await newKey("spender");
    const keyId = await keyIdOf(hash);
    await sql(`UPDATE api_keys SET quota_micro = 3000 WHERE key_hash = $1`, [hash]);
    await sql(`UPDATE accounts SET balance_micro = 5000 WHERE id = $1::uuid`, [accountId]);
    await publish();
    const held = store.key(hash)!;
    const heldAccount = store.account(accountId)!;
    const entityBytes = Buffer.byteLength((await shardField("key", hash))!);
    const before = await streamLength();
    await settleUsageBatch(db.db, [usage(keyId, 1000)]);
    await publish();
    const entries = await streamEntries(before);
    expect(entries.map((e) => `${e.k} ${e.i}`).sort()).toEqual([`account.money ${accountId}`, `key.money ${hash}`]);
    const keyMoney = entries.find((e) => e.k === "key.money")!;
    const accountMoney = entries.find((e) => e.k === "account.money")!;
    expect(keyMoney.d).toBe(`{"v":${keyMoney.v},"spent":"1000"}`);
    expect(accountMoney.d).toMatch(new RegExp(`^\\{"v":${accountMoney.v},"balance":"4000","spent":"\\d+"\\}$`));
    // in the shard beside the entity (a full load reads both), the entity's own field untouched
    expect(await shardField("key", `$${hash}`)).toBe(keyMoney.d);
    expect(Buffer.byteLength(keyMoney.d)).toBeLessThan(entityBytes / 4);
    // the objects requests hold are the same, with the settled figures
    expect(store.key(hash)).toBe(held);
    expect(store.account(accountId)).toBe(heldAccount);
    expect(held).toMatchObject({ spent: "1000", quota: "3000", status: "active" });
    expect(heldAccount.balance).toBe("4000");
    const call = (keySpent: bigint, accountSpent: bigint) =>
      checkKeyPolicy({
        key: store.key(hash)!,
        account: store.account(accountId)!,
        model: "m",
        clientIp: null,
        now: Date.now(),
        spend: { keySpent, accountSpent },
      })?.code ?? null;
    expect(call(1999n, 0n)).toBeNull();
    expect(call(2000n, 0n)).toBe("insufficient_quota");
    await settleUsageBatch(db.db, [usage(keyId, 1000), usage(keyId, 3000)]);
    await publish();
    expect(store.key(hash)?.spent).toBe("5000");
    expect(store.account(accountId)?.balance).toBe("0");
    expect(call(0n, 0n)).toBe("insufficient_quota");
    await sql(`UPDATE api_keys SET quota_micro = NULL WHERE key_hash = $1`, [hash]);
    await publish();
    expect(call(0n, 0n)).toBe("insufficient_balance");
    expect(store.fullLoads).toBe(1);
  });

  it("a policy change between settlements republishes the entity with the figures so far; every order of the same changes ends in the same state; a full load gets the entity and the newer figures", async () => {
    const hash = await newKey("revoked-between");
    const keyId = await keyIdOf(hash);
    await publish();
    const before = await streamLength();
    await settleUsageBatch(db.db, [usage(keyId, 10)]);
    await publish();
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [hash]);
    await publish();
    expect(store.key(hash)).toMatchObject({ status: "revoked", spent: "10" });
    // usage of calls that were in flight at the revocation still settles
    await settleUsageBatch(db.db, [usage(keyId, 20)]);
    await publish();
    expect(store.key(hash)).toMatchObject({ status: "revoked", spent: "30" });
    const entries = (await streamEntries(before)).filter((e) => e.i === hash);
    expect(entries.map((e) => e.k)).toEqual(["key.money", "key", "key.money"]);
    expect(entries[1]!.d).toContain('"status":"revoked","expiresAt":null,"quota":null,"spent":"10"');

    // A replica loading in full now: the entity (revoked, spent 10) and the newer money field (30).
    expect(await shardField("key", hash)).toContain('"spent":"10"');
    expect(await shardField("key", `$${hash}`)).toBe(entries[2]!.d);
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    expect(replica.key(hash)).toMatchObject({ status: "revoked", spent: "30" });
    await follower.stop();

    // Whatever order a replica got these in (replays included), it ends where the feed's order ends.
    const changes = entries.map((e) => ({ kind: e.k, id: e.i, v: Number(e.v), json: e.d }) as PolicyChange);
    fc.assert(
      fc.property(
        fc.shuffledSubarray(changes, { minLength: changes.length }),
        fc.nat(changes.length - 1),
        (order, replay) => {
          const other = new SnapshotStore();
          for (const c of [...order, changes[replay]!]) other.applyChange(c);
          expect(other.key(hash)).toMatchObject({ status: "revoked", spent: "30" });
        },
      ),
    );

    // An entity written at the money field's version or newer carries the figures: the money field goes.
    await sql(`UPDATE api_keys SET name = 'renamed' WHERE key_hash = $1`, [hash]);
    await publish();
    expect(await shardField("key", `$${hash}`)).toBeNull();
    expect(await shardField("key", hash)).toContain('"spent":"30"');
    expect(store.key(hash)).toMatchObject({ name: "renamed", spent: "30" });
  });

  it("the triggers compare every column but the money ones (a column added later must be added to them)", async () => {
    const money: Record<string, string[]> = {
      api_keys: ["spent_micro", "last_used_at", "updated_at"],
      accounts: ["balance_micro", "spent_micro", "updated_at"],
    };
    for (const [table, fn] of [
      ["api_keys", "policy_keys_upd_split"],
      ["accounts", "policy_accounts_upd_split"],
    ] as const) {
      const [{ def }] = (await sql<{ def: string }>(`SELECT pg_get_functiondef($1::regproc) AS def`, [fn])) as [
        { def: string },
      ];
      const columns = await sql<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
        [table],
      );
      const missing = columns
        .map((r) => r.c)
        .filter((c) => !money[table]!.includes(c))
        .filter((c) => !new RegExp(`\\bn\\.${c}\\b`).test(def) || !new RegExp(`\\bo\\.${c}\\b`).test(def));
      expect({ table, missing }).toEqual({ table, missing: [] });
    }
  });

  it("a money change and an entity change of one transaction publish the entity alone", async () => {
    const hash = await newKey("both");
    await publish();
    const before = await streamLength();
    await db.db.sql.transaction(async (tx) => {
      await tx.query(`UPDATE api_keys SET spent_micro = spent_micro + 5 WHERE key_hash = $1`, [hash]);
      await tx.query(`UPDATE api_keys SET name = 'both-renamed' WHERE key_hash = $1`, [hash]);
    });
    await publish();
    const entries = await streamEntries(before);
    expect(entries.map((e) => e.k)).toEqual(["key"]);
    expect(store.key(hash)).toMatchObject({ name: "both-renamed", spent: "5" });
  });

  it("embedded: settlement reaches the store as money changes, patched in place", async () => {
    const local = new SnapshotStore();
    const applied: string[] = [];
    const apply = local.applyChange.bind(local);
    local.applyChange = (c) => {
      applied.push(c.kind);
      return apply(c);
    };
    const embedded = new SnapshotPublisher(db.db, new InProcessPolicyBus(local), 1, (err) => {
      throw err;
    });
    await embedded.start();
    const hash = await newKey("embedded");
    const keyId = await keyIdOf(hash);
    embedded.changed();
    await embedded.flush();
    const held = local.key(hash)!;
    applied.length = 0;
    await settleUsageBatch(db.db, [usage(keyId, 7)]);
    embedded.changed();
    await embedded.flush();
    expect(applied.sort()).toEqual(["account.money", "key.money"]);
    expect(local.key(hash)).toBe(held);
    expect(held.spent).toBe("7");
    expect(local.account(accountId)?.balance).toBe(
      (await sql<{ b: string }>(`SELECT balance_micro::text AS b FROM accounts WHERE id = $1::uuid`, [accountId]))[0]!
        .b,
    );
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [hash]);
    embedded.changed();
    await embedded.flush();
    expect(local.key(hash)).toMatchObject({ status: "revoked", spent: "7" });
    embedded.stop();
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
    const follower = new RedisPolicySource(
      gated,
      sub,
      replica,
      names,
      3_600_000,
      (err) => {
        throw err;
      },
      // on the main thread: the test intercepts this client's HSCANs (the worker has a connection of its own)
      { loadIn: "thread" },
    );
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
    const follower = new RedisPolicySource(
      counted,
      sub,
      replica,
      names,
      3_600_000,
      (err) => {
        throw err;
      },
      // on the main thread: the test intercepts this client's HSCANs (the worker has a connection of its own)
      { loadIn: "thread" },
    );
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

  it("when Redis lost the feed, changes reach replicas at once on a bridge epoch while the full publication is written beside it; the replica then loads the new epoch", async () => {
    // A control plane whose full publication can be held before its first page.
    let hold = false;
    const { cp, atPage, release } = heldPublisher(() => hold);
    // A replica that falls behind before the loss (it misses the last change before it).
    const behind = new SnapshotStore();
    const lagging = replicaOf(behind);
    await lagging.sync();
    const victim = await newKey("revoked-on-bridge");
    const missed = await newKey("missed-by-one");
    cp.changed();
    await cp.flush();
    await source.sync();
    expect(store.key(victim)?.status).toBe("active");
    expect(behind.key(missed)).toBeUndefined();
    const lost = (await redis.hget(names.policyMeta, "epoch"))!;
    const loads = store.fullLoads;
    const published = cp.fullPublications;

    // Redis loses everything (a restart without persistence); then a key is revoked and another created.
    const beforeLoss = Date.now();
    const all = await redis.keys(`${names.prefix}*`);
    await redis.del(...all);
    hold = true;
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [victim]);
    const created = await newKey("created-on-bridge");
    cp.changed();
    await atPage;
    await cp.flush();
    await source.sync();
    // The full publication is held; the changes went to a bridge epoch, which the replica follows.
    expect(cp.bridges).toBe(1);
    expect(cp.fullPublications).toBe(published);
    const bridge = (await redis.hget(names.policyMeta, "epoch"))!;
    expect(bridge).not.toBe(lost);
    expect(await redis.hget(names.policyMeta, "base")).not.toBeNull();
    expect(store.key(victim)?.status).toBe("revoked");
    expect(store.key(created)?.status).toBe("active");
    expect(store.fullLoads).toBe(loads);
    // It was current at the lost feed's cursor, so it is current again (it confirmed the bridge's head)…
    expect(store.publishedAgeMs()).toBeLessThanOrEqual(Date.now() - beforeLoss);
    // …while the one behind applies the bridge's changes too but cannot say it is current (it lacks one).
    await lagging.sync();
    expect(behind.key(missed)).toBeUndefined();
    expect(behind.key(victim)?.status).toBe("revoked");
    expect(behind.key(created)?.status).toBe("active");
    expect(behind.publishedAgeMs()).toBeGreaterThan(Date.now() - beforeLoss);
    // A replica that holds nothing has nothing to build on: it waits for the full epoch.
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    expect(fresh.loaded).toBe(false);

    // The full publication completes: the new epoch is current and loaded, the bridge expires.
    release();
    await cp.republishing;
    await cp.flush();
    await source.sync();
    await follower.sync();
    expect(cp.fullPublications).toBe(published + 1);
    expect(await redis.hget(names.policyMeta, "base")).toBeNull();
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(bridge);
    expect(await redis.ttl(names.policyStream(bridge))).toBeGreaterThan(0);
    expect(store.fullLoads).toBe(loads + 1);
    for (const replica of [store, fresh]) {
      expect(replica.key(victim)?.status).toBe("revoked");
      expect(replica.key(created)?.status).toBe("active");
    }
    await lagging.sync();
    expect(behind.key(missed)?.status).toBe("active");
    expect(fresh.size).toEqual(store.size);
    expect(behind.size).toEqual(store.size);
    await follower.stop();
    await lagging.stop();
    cp.stop();
  });

  it("a control plane that restarted with Redis (it never saw the lost feed) bridges from the cursor recorded in Postgres: a revocation after the restart reaches a replica holding the old policy at once; a fresh replica waits for the full epoch", async () => {
    const victim = await newKey("revoked-after-restart");
    await publish();
    expect(store.key(victim)?.status).toBe("active");
    // Every round records where the feed stands, after its append.
    const [recorded] = await sql<{ cursor: string; epoch: string; seq: string }>(
      `SELECT cursor, epoch, seq::text AS seq FROM policy_feed_position WHERE feed = $1`,
      [names.policyMeta],
    );
    expect(recorded).toEqual({
      cursor: await redis.hget(names.policyMeta, "cursor"),
      epoch: await redis.hget(names.policyMeta, "epoch"),
      seq: await redis.hget(names.policyMeta, "seq"),
    });
    const loads = store.fullLoads;

    // The control plane stops and Redis restarts empty; after the restart a key is revoked and another created.
    const beforeLoss = Date.now();
    await redis.del(...(await redis.keys(`${names.prefix}*`)));
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [victim]);
    const created = await newKey("created-after-restart");
    // A new control plane (no memory of any head) starts, its full publication held.
    const { cp, atPage, release } = heldPublisher(() => true);
    const started = cp.start();
    await atPage;
    // The publication held is the one beside the bridge (with no bridge, it would be the round's own).
    expect(cp.bridges).toBe(1);
    expect(cp.republishing).not.toBeNull();
    await started;
    await cp.flush();
    await source.sync();
    expect(cp.fullPublications).toBe(0);
    expect(await redis.hget(names.policyMeta, "base")).toBe(recorded!.cursor);
    expect(store.key(victim)?.status).toBe("revoked");
    expect(store.key(created)?.status).toBe("active");
    expect(store.fullLoads).toBe(loads);
    // It was current at the recorded cursor, so it is current again.
    expect(store.publishedAgeMs()).toBeLessThanOrEqual(Date.now() - beforeLoss);
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    expect(fresh.loaded).toBe(false);

    release();
    await cp.republishing;
    await cp.flush();
    await source.sync();
    await follower.sync();
    expect(cp.fullPublications).toBe(1);
    expect(await redis.hget(names.policyMeta, "base")).toBeNull();
    expect(fresh.key(victim)?.status).toBe("revoked");
    expect(fresh.key(created)?.status).toBe("active");
    expect(fresh.size).toEqual(store.size);
    await follower.stop();
    cp.stop();
  });

  it("the recorded position only moves forward, and one ahead of the database (a restore) or recorded in another database is not bridged from: the control plane publishes in full", async () => {
    await publish();
    const position = async () =>
      (await sql<{ cursor: string }>(`SELECT cursor FROM policy_feed_position WHERE feed = $1`, [names.policyMeta]))[0]!
        .cursor;
    // A slow control plane's record of an older cursor does not overwrite a newer one.
    const newer = await position();
    await recordFeedPosition(db.db, names.policyMeta, { epoch: "old", cursor: "3:3:", seq: 1 });
    expect(await position()).toBe(newer);
    for (const tamper of [
      // Postgres restored to an earlier point than the record (as a dump from before the restore would leave)
      `UPDATE policy_feed_position SET cursor = '4000000000:4000000000:'`,
      // a record a dump carried over from another database
      `UPDATE policy_feed_position SET database = 'another'`,
    ]) {
      await sql(tamper);
      await redis.del(...(await redis.keys(`${names.prefix}*`)));
      const cp = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
        throw err;
      });
      await cp.start();
      expect(cp.bridges).toBe(0);
      expect(cp.fullPublications).toBe(1);
      expect(await redis.hget(names.policyMeta, "base")).toBeNull();
      // Such a record is replaced by the new feed's position.
      expect(await position()).toBe(await redis.hget(names.policyMeta, "cursor"));
      cp.stop();
    }
    await source.sync();
  });

  it("a control plane that finds a bridge epoch current (the one that started it died) writes its full publication", async () => {
    // Redis lost the feed and a control plane bridged it, then died before its full publication was current.
    const lostAt = (await redis.hget(names.policyMeta, "cursor"))!;
    const all = await redis.keys(`${names.prefix}*`);
    await redis.del(...all);
    const bridge = await new RedisPolicyBus(redis, names).bridge(lostAt, Date.now());
    expect(bridge?.bridge).toBe(true);
    const revoked = await newKey("revoked-after-the-bridge");
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [revoked]);
    // Another control plane starts: it appends to the bridge at once, and publishes in full beside it.
    const next = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
      throw err;
    });
    await next.start();
    await next.flush();
    await source.sync();
    expect(store.key(revoked)?.status).toBe("revoked");
    await next.republishing;
    await next.flush();
    expect(next.fullPublications).toBe(1);
    expect(next.bridges).toBe(0);
    expect(await redis.hget(names.policyMeta, "base")).toBeNull();
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(bridge!.epoch);
    // A replica that holds nothing can start now.
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    expect(fresh.loaded).toBe(true);
    expect(fresh.key(revoked)?.status).toBe("revoked");
    await follower.stop();
    next.stop();
    await source.sync();
  });

  it("a full publication during which Redis restarted empty is not made current; the next one publishes the whole set", async () => {
    let holdAt = Infinity;
    const errors: unknown[] = [];
    const { cp, atPage, release, pages } = heldPublisher(
      (page) => page === holdAt,
      (err) => void errors.push(err),
    );
    cp.changed();
    await cp.flush();
    // A republication whose first page is written, then Redis restarts empty before the rest.
    holdAt = pages() + 2;
    cp.republish();
    await atPage;
    const all = await redis.keys(`${names.prefix}*`);
    await redis.del(...all);
    release();
    await cp.republishing;
    expect(String(errors[0])).toMatch(/lost the full publication's pages/);
    // The next rounds bridge and publish in full again (the one that failed made nothing current).
    cp.changed();
    await cp.flush();
    await cp.republishing;
    await cp.flush();
    expect(await redis.hget(names.policyMeta, "base")).toBeNull();
    const [{ n }] = (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys`)) as [{ n: number }];
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    expect(fresh.size.keys).toBe(n);
    await follower.stop();
    cp.stop();
    await source.sync();
  });

  it("publishes a bulk insert and a mass revocation of more keys than a page as changes, in pages: no full publication, no full load", async () => {
    let appends = 0;
    const counted = new Proxy(redis, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === "policyAppend")
          return (...args: string[]) => {
            appends++;
            return (v as (...a: string[]) => Promise<unknown>).apply(target, args);
          };
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const small = new SnapshotPublisher(
      db.db,
      new RedisPolicyBus(counted, names),
      1,
      (err) => {
        throw err;
      },
      { maxChanges: 50 },
    );
    const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
    const seq = Number(await redis.hget(names.policyMeta, "seq"));
    const loads = store.fullLoads;
    const hashes = await bulkKeys("bulk", 320);
    small.changed();
    await small.flush();
    await source.sync();
    expect(small.fullPublications).toBe(0);
    expect(await redis.hget(names.policyMeta, "epoch")).toBe(epoch);
    expect(Number(await redis.hget(names.policyMeta, "seq"))).toBe(seq + 320);
    expect(appends).toBeGreaterThanOrEqual(7); // a page of at most 50 per append
    expect(store.fullLoads).toBe(loads);
    for (const h of hashes) expect(store.key(h)?.status).toBe("active");

    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE name LIKE 'bulk-%'`);
    small.changed();
    await small.flush();
    await source.sync();
    expect(small.fullPublications).toBe(0);
    expect(store.fullLoads).toBe(loads);
    for (const h of hashes) expect(store.key(h)?.status).toBe("revoked");
    // …and a replica starting now reads the same from the shards
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    for (const h of hashes) expect(replica.key(h)?.status).toBe("revoked");
    expect(replica.size).toEqual(store.size);
    await follower.stop();
    small.stop();
  });

  it("a replica that subscribes while its connection's handshake is in flight hears the feed's notifications", async () => {
    // Subscribed on "connect" (before ioredis' ready check), as a replica starting next to a fast Redis can:
    // ioredis then sent the ready check after the SUBSCRIBE, Redis refused it, and no notification ever came.
    const fresh = new Redis(REDIS_URL);
    fresh.on("error", () => undefined);
    await new Promise<void>((resolve) => fresh.once("connect", () => resolve()));
    const replica = new SnapshotStore();
    // polls once an hour: only a notification can bring the change
    const follower = new RedisPolicySource(redis, fresh, replica, names, 3_600_000, (err) => {
      throw err;
    });
    try {
      await follower.start();
      const hash = await newKey("heard");
      publisher.changed();
      await publisher.flush();
      await vi.waitFor(() => expect(replica.key(hash)?.status).toBe("active"), { timeout: 5_000 });
      expect(await follower.checkSubscription()).toBe(true);
    } finally {
      await follower.stop();
      fresh.disconnect();
    }
    await source.sync();
  });

  it("a replica sees when its subscription delivers nothing, says so, and subscribes again", async () => {
    // The subscription can die while the connection looks fine (the handshake race above; a soak showed one
    // subscriber for two replicas). The replica then followed policy by its poll alone, and nothing showed it.
    const sub = new Redis(REDIS_URL);
    sub.on("error", () => undefined);
    const replica = new SnapshotStore();
    const follower = new RedisPolicySource(redis, sub, replica, names, 3_600_000, (err) => {
      throw err;
    });
    try {
      await follower.start();
      await vi.waitFor(() => expect(follower.subscriptionLive).toBe(true), { timeout: 5_000 });
      // Behind the source's back: the connection stays up, the channels are gone (what the race leaves).
      await sub.unsubscribe();
      expect(await follower.checkSubscription()).toBe(false);
      expect(follower.subscriptionLive).toBe(false);
      // The check subscribed again: the next one finds it live, and a change is heard (the poll is an hour).
      await vi.waitFor(async () => expect(await follower.checkSubscription()).toBe(true), { timeout: 5_000 });
      const hash = await newKey("heard-again");
      publisher.changed();
      await publisher.flush();
      await vi.waitFor(() => expect(replica.key(hash)?.status).toBe("active"), { timeout: 5_000 });
    } finally {
      await follower.stop();
      sub.disconnect();
    }
    await source.sync();
  });

  it("a replica applies a batch of changes in slices: the event loop runs between them", async () => {
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    const hashes = await bulkKeys("slices", 60);
    publisher.changed();
    await publisher.flush();
    // Each change takes 0.5 ms to apply here (a fold's cost, say); the 60 arrive in one stream read. Other work
    // (an immediate that re-schedules itself) counts how often the loop got a turn while they were applied.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const turnAt: number[] = [];
    const apply = replica.applyChange.bind(replica);
    replica.applyChange = (c) => {
      const until = performance.now() + 0.5;
      while (performance.now() < until);
      turnAt.push(turns);
      return apply(c);
    };
    try {
      await follower.sync();
    } finally {
      ticking = false;
    }
    expect(turnAt).toHaveLength(60);
    // 30 ms of applying in 2 ms slices: the loop ran between them (one synchronous batch would show no turn)
    expect(turnAt.at(-1)! - turnAt[0]!).toBeGreaterThanOrEqual(5);
    for (const h of hashes) expect(replica.key(h)?.status).toBe("active");
    await follower.stop();
    await source.sync();
  });

  // A publisher (pages of maxChanges) whose n-th append is held until released.
  const holding = (n: number, maxChanges: number) => {
    let appends = 0;
    let reached!: () => void;
    const atAppend = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const proxy = new Proxy(redis, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === "policyAppend")
          return async (...args: string[]) => {
            if (++appends === n) {
              reached();
              await gate;
            }
            return (v as (...a: string[]) => Promise<unknown>).apply(target, args);
          };
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const publisher = new SnapshotPublisher(
      db.db,
      new RedisPolicyBus(proxy, names),
      1,
      (err) => {
        throw err;
      },
      { maxChanges },
    );
    return { publisher, atAppend, release };
  };

  it("a revocation while a bulk is appended is read between its pages and reaches the feed before the bulk's rest", async () => {
    const hash = await newKey("revoked-mid-bulk");
    await publish();
    // The bulk's second page is held at its append (the first is in the stream) until the revocation committed.
    const { publisher: bulkPublisher, atAppend, release } = holding(2, 50);
    const hashes = await bulkKeys("midbulk", 200);
    bulkPublisher.changed();
    const flushed = bulkPublisher.flush();
    await atAppend;
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [hash]);
    bulkPublisher.changed();
    release();
    await flushed;
    await source.sync();
    expect(store.key(hash)?.status).toBe("revoked");
    for (const h of hashes) expect(store.key(h)?.status).toBe("active");
    expect(bulkPublisher.fullPublications).toBe(0);
    // In the stream: the revocation between the bulk's pages, each key once.
    const entries = await streamEntries();
    const revokedAt = entries.findIndex((e) => e.i === hash && e.d.includes('"status":"revoked"'));
    const bulkAt = entries.map((e, i) => (hashes.includes(e.i) ? i : -1)).filter((i) => i >= 0);
    expect(revokedAt).toBeGreaterThan(bulkAt[0]!);
    expect(revokedAt).toBeLessThan(bulkAt[bulkAt.length - 1]!);
    expect(bulkAt.length).toBe(200);
    bulkPublisher.stop();
  });

  it("a full publication asked for is written beside the current epoch: a revocation meanwhile reaches replicas on the current one, and the new epoch has it", async () => {
    const revoked = await newKey("revoked-during-full");
    await publish();
    // The full publication's snapshot is taken, then it is held before it writes its first page.
    const { cp: republisher, atPage, release } = heldPublisher(() => true);
    const before = (await redis.hget(names.policyMeta, "epoch"))!;
    const loads = store.fullLoads;
    republisher.republish();
    await atPage;
    const full = republisher.republishing;
    expect(full).not.toBeNull();

    // While it is held: a revocation and a new key go to the current epoch, and the replica applies them.
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = $1`, [revoked]);
    const created = await newKey("created-during-full");
    republisher.changed();
    await republisher.flush();
    await source.sync();
    expect(store.key(revoked)?.status).toBe("revoked");
    expect(store.key(created)?.status).toBe("active");
    expect(await redis.hget(names.policyMeta, "epoch")).toBe(before);
    expect(republisher.fullPublications).toBe(0);
    expect(store.fullLoads).toBe(loads);

    // It completes: the new epoch is current, and the changes after its snapshot are appended to it.
    release();
    await full;
    await republisher.flush();
    await source.sync();
    expect(republisher.fullPublications).toBe(1);
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(before);
    expect(await redis.ttl(names.policyCatalog(before))).toBeGreaterThan(0);
    expect(store.fullLoads).toBe(loads + 1);
    expect(store.key(revoked)?.status).toBe("revoked");
    expect(store.key(created)?.status).toBe("active");
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    expect(replica.key(revoked)?.status).toBe("revoked");
    expect(replica.key(created)?.status).toBe("active");
    expect(replica.size).toEqual(store.size);
    await follower.stop();
    republisher.stop();
  });

  it("in a bulk read over many pages, a key whose money and policy both changed is published whole once, whichever pages its two rows fall in", async () => {
    const small = new SnapshotPublisher(
      db.db,
      new RedisPolicyBus(redis, names),
      1,
      (err) => {
        throw err;
      },
      { maxChanges: 20 },
    );
    const hashes = await bulkKeys("twokinds", 120);
    await publish();
    const before = await streamLength();
    // settlement-shaped (money only) for all, then a policy change of every other one
    await sql(`UPDATE api_keys SET spent_micro = spent_micro + 7 WHERE key_hash = ANY ($1::text[])`, [hashes]);
    await sql(`UPDATE api_keys SET name = name || '-renamed' WHERE key_hash = ANY ($1::text[])`, [
      hashes.filter((_, i) => i % 2 === 0),
    ]);
    small.changed();
    await small.flush();
    await source.sync();
    const entries = (await streamEntries(before)).filter((e) => hashes.includes(e.i));
    expect(entries.length).toBe(120);
    const renamed = entries.filter((e) => e.k === "key");
    expect(renamed.length).toBe(60);
    for (const e of renamed) expect(e.d).toContain('"spent":"7"');
    expect(entries.filter((e) => e.k === "key.money").length).toBe(60);
    for (const h of hashes) expect(store.key(h)?.spent).toBe("7");
    expect(small.fullPublications).toBe(0);
    small.stop();
  });

  it("two publishers appending bulks at once never interleave their pages: an entity's versions only grow along the stream, and replicas end right", async () => {
    const hashes = await bulkKeys("race", 120);
    // A reads the bulk insert and appends its first page; its second is held.
    const a = holding(2, 30);
    a.publisher.changed();
    const aDone = a.publisher.flush();
    await a.atAppend;
    // The bulk is revoked; B reads that (newer versions of the same keys) and appends two pages; its third is held.
    await sql(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE name LIKE 'race-%'`);
    const b = holding(3, 30);
    b.publisher.changed();
    const bDone = b.publisher.flush();
    await b.atAppend;
    // A's second page (older versions) is refused: B appended since A's first. A reads again and publishes all.
    a.release();
    await aDone;
    b.release();
    await bDone;
    await source.sync();
    const last = new Map<string, number>();
    for (const e of await streamEntries()) {
      if (!hashes.includes(e.i)) continue;
      expect(Number(e.v)).toBeGreaterThanOrEqual(last.get(e.i) ?? 0);
      last.set(e.i, Number(e.v));
    }
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    for (const h of hashes) {
      expect(store.key(h)?.status).toBe("revoked");
      expect(replica.key(h)?.status).toBe("revoked");
    }
    expect(a.publisher.fullPublications + b.publisher.fullPublications).toBe(0);
    await follower.stop();
    a.publisher.stop();
    b.publisher.stop();
  });

  it("a stale publisher (behind the head) does not append", async () => {
    const bus = new RedisPolicyBus(redis, names);
    const head = (await bus.head())!;
    expect(await bus.append({ ...head, cursor: "1:1:" }, [], head.cursor, 0)).toBeNull();
    expect(await bus.append({ ...head, seq: head.seq - 1 }, [], head.cursor, 0)).toBeNull();
    expect(await bus.append(head, [], head.cursor, 0)).toEqual(head);
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
    const follower = replicaOf(replica);
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
    expect(
      await bus.append(head, [{ kind: "key", id: hash, v: versionOf(older), json: older }], head.cursor, 0),
    ).toMatchObject({ seq: head.seq + 1 });
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
    expect(await bus.append(stale, [change], "1:1:", versionOf(alive))).toBeNull();
    expect(await redis.hget(shardKey, hash)).toBe(tombstone);
    const replica = new SnapshotStore();
    const follower = replicaOf(replica);
    await follower.sync();
    expect(replica.key(hash)).toBeUndefined();
    expect(replica.size.keys).toBe(store.size.keys);
    await follower.stop();
  });

  it("compacts tombstones: past the threshold the epoch is published again beside it without them, and replicas follow it, still refusing the deleted keys; at the threshold nothing happens", async () => {
    const bus = new RedisPolicyBus(redis, names);
    await publish();
    const before = (await bus.head())!;
    // Compaction past three tombstones more than the epoch counts now (no share of the entities: a fixed figure).
    const threshold = before.tombstones! + 3;
    const cp = new SnapshotPublisher(
      db.db,
      new RedisPolicyBus(redis, names),
      1,
      (err) => {
        throw err;
      },
      { compactTombstones: threshold, compactShare: 0 },
    );
    const doomed: string[] = [];
    for (let i = 0; i < 5; i++) doomed.push(await newKey(`churned-${i}`));
    const live = await newKey("outlives-the-churn");
    cp.changed();
    await cp.flush();
    await source.sync();
    const deleteKeys = (hashes: string[]) => sql(`DELETE FROM api_keys WHERE key_hash = ANY($1)`, [hashes]);
    const isTombstone = (v: string) => /^\{"v":\d+\}$/.test(v);

    // Three deletions: the head counts them (at the threshold, not past it), and nothing is republished.
    await deleteKeys(doomed.slice(0, 3));
    cp.changed();
    await cp.flush();
    expect((await bus.head())!.tombstones).toBe(threshold);
    expect(isTombstone((await shardField("key", doomed[0]!))!)).toBe(true);
    expect(cp.compactions).toBe(0);
    expect(cp.republishing).toBeNull();
    expect((await bus.head())!.epoch).toBe(before.epoch);
    await source.sync();
    // the replica remembers each deletion (a change with no entity) until its next full load
    expect(store.shard("key", shardOf(doomed[0]!)).changes.get(doomed[0]!)?.json).toBeNull();

    // Two more: past it. The round that appended them starts a full publication beside the epoch.
    const loads = store.fullLoads;
    await deleteKeys(doomed.slice(3));
    cp.changed();
    await cp.flush();
    expect(cp.compactions).toBe(1);
    expect(cp.republishing).not.toBeNull();
    await cp.republishing;
    await cp.flush();
    expect(cp.fullPublications).toBe(1);
    const after = (await bus.head())!;
    expect(after.epoch).not.toBe(before.epoch);
    expect(after.tombstones).toBe(0);
    // No shard of the new epoch holds a tombstone; the old epoch's expire.
    let fields = 0;
    for (let n = 0; n < POLICY_SHARDS; n++)
      for (const kind of ["key", "account"] as const)
        for (const [field, value] of Object.entries(await redis.hgetall(names.policyShard(after.epoch, kind, n)))) {
          if (!field.startsWith("$")) fields++;
          expect(isTombstone(value), field).toBe(false);
        }
    expect(await redis.ttl(names.policyShard(before.epoch, "key", shardOf(doomed[0]!)))).toBeGreaterThan(0);

    // The replica loads the new epoch: the deleted keys stay refused (and are no longer remembered), the live one is served.
    await source.sync();
    expect(fields).toBe(store.size.keys + store.size.accounts);
    expect(store.fullLoads).toBe(loads + 1);
    for (const hash of doomed) {
      expect(store.key(hash)).toBeUndefined();
      expect(store.shard("key", shardOf(hash)).changes.has(hash)).toBe(false);
    }
    expect(store.key(live)?.status).toBe("active");
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    for (const hash of doomed) expect(fresh.key(hash)).toBeUndefined();
    expect(fresh.key(live)?.status).toBe("active");
    expect(fresh.size).toEqual(store.size);
    await follower.stop();

    // A deletion on the new epoch counts from zero there; the rounds go on without another full publication.
    await deleteKeys([live]);
    cp.changed();
    await cp.flush();
    await source.sync();
    expect((await bus.head())!.tombstones).toBe(1);
    expect(store.key(live)).toBeUndefined();
    expect(cp.fullPublications).toBe(1);
    expect(cp.compactions).toBe(1);
    cp.stop();
  });

  it("embedded: the in-process store's remembered deletions are compacted the same way: at the threshold nothing happens; past it a full publication into a new in-process epoch, served throughout, after which the store no longer remembers them, deleted keys stay refused and live and new keys are served", async () => {
    const local = new SnapshotStore();
    const bus = new InProcessPolicyBus(local);
    // the compaction's full publication is held before its first page (after its snapshot) until released
    let hold = false;
    let reached!: () => void;
    const atPage = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const cp = new SnapshotPublisher(
      db.db,
      bus,
      1,
      (err) => {
        throw err;
      },
      {
        compactTombstones: 3,
        compactShare: 0,
        pageSize: 2,
        beforeFullPage: async () => {
          if (!hold) return;
          hold = false;
          reached();
          await gate;
        },
      },
    );
    const round = async () => {
      cp.changed();
      await cp.flush();
    };
    const deleteKeys = (hashes: string[]) => sql(`DELETE FROM api_keys WHERE key_hash = ANY($1)`, [hashes]);
    const remembered = (hash: string) => local.shard("key", shardOf(hash)).changes.get(hash)?.json === null;
    await cp.start();
    const first = (await bus.head())!;
    expect(first).toMatchObject({ seq: 0, tombstones: 0 });
    expect(first.entities).toBe(local.size.keys + local.size.accounts);
    const doomed: string[] = [];
    for (let i = 0; i < 5; i++) doomed.push(await newKey(`embedded-churned-${i}`));
    const live = await newKey("embedded-outlives-the-churn");
    const late = await newKey("embedded-deleted-while-compacting");
    await round();

    // Three deletions: the head counts them (at the threshold, not past it), and the store remembers each.
    await deleteKeys(doomed.slice(0, 3));
    await round();
    expect((await bus.head())!).toMatchObject({ epoch: first.epoch, tombstones: 3 });
    expect(cp.compactions).toBe(0);
    expect(cp.republishing).toBeNull();
    expect(local.deletions).toBe(3);
    expect(remembered(doomed[0]!)).toBe(true);
    expect(local.fullLoads).toBe(1);

    // Two more: past it. The round that appended them starts a full publication into a new in-process epoch.
    hold = true;
    await deleteKeys(doomed.slice(3));
    await round();
    expect(cp.compactions).toBe(1);
    expect(cp.republishing).not.toBeNull();
    await atPage;
    // While it is written the store serves its current state, and rounds go on appending to the current epoch.
    expect(local.loading).toBe(true);
    const during = await newKey("embedded-created-while-compacting");
    await deleteKeys([late]);
    await round();
    expect((await bus.head())!.epoch).toBe(first.epoch);
    for (const hash of [...doomed, late]) expect(local.key(hash)).toBeUndefined();
    expect(local.key(live)?.status).toBe("active");
    expect(local.key(during)?.status).toBe("active");
    release();
    await cp.republishing;
    await cp.flush();

    const after = (await bus.head())!;
    expect(after.epoch).not.toBe(first.epoch);
    expect(after.entities).toBe(local.size.keys + local.size.accounts);
    expect(cp.fullPublications).toBe(2);
    expect(local.fullLoads).toBe(2);
    expect(local.loading).toBe(false);
    // The deletions before the new epoch's snapshot are no longer remembered; the one during it (applied while
    // the load ran) is, and is the new epoch's one tombstone (appended again after its snapshot).
    for (const hash of doomed) {
      expect(local.key(hash)).toBeUndefined();
      expect(remembered(hash)).toBe(false);
    }
    expect(remembered(late)).toBe(true);
    expect(local.deletions).toBe(1);
    expect(after.tombstones).toBe(1);
    expect(local.key(late)).toBeUndefined();
    expect(local.key(live)?.status).toBe("active");
    expect(local.key(during)?.status).toBe("active");
    const fresh = await newKey("embedded-created-after-compaction");
    await round();
    expect(local.key(fresh)?.status).toBe("active");

    // A deletion on the new epoch counts from there; the rounds go on without another full publication.
    await deleteKeys([live]);
    await round();
    expect(local.key(live)).toBeUndefined();
    expect((await bus.head())!.tombstones).toBe(2);
    expect(local.deletions).toBe(2);
    expect(cp.compactions).toBe(1);
    expect(cp.fullPublications).toBe(2);
    cp.stop();
  });

  it("embedded: a full publication that fails midway ends the store's full load (it keeps serving, and no longer says it is loading); the next one publishes", async () => {
    const local = new SnapshotStore();
    const errors: unknown[] = [];
    let fail = false;
    const cp = new SnapshotPublisher(db.db, new InProcessPolicyBus(local), 1, (err) => errors.push(err), {
      pageSize: 2,
      beforeFullPage: async () => {
        if (!fail) return;
        fail = false;
        throw new Error("read failed");
      },
    });
    await cp.start();
    const hash = await newKey("embedded-survives-a-failed-publication");
    cp.changed();
    await cp.flush();
    fail = true;
    cp.republish();
    await cp.flush();
    await cp.republishing;
    expect(errors).toEqual([new Error("read failed")]);
    expect(local.loading).toBe(false);
    expect(local.fullLoads).toBe(1);
    expect(local.key(hash)?.status).toBe("active");
    cp.republish();
    await cp.flush();
    await cp.republishing;
    await cp.flush();
    expect(local.fullLoads).toBe(2);
    expect(local.key(hash)?.status).toBe("active");
    expect(errors).toHaveLength(1);
    cp.stop();
  });

  it("one full publication at a time: a control plane asked to republish while another runs one skips it (a lease, renewed while held, released at the end) and finds it done at its next round", async () => {
    const lease = fullLease(names);
    const epoch = async () => (await redis.hget(names.policyMeta, "epoch"))!;
    // The shortest lease the product accepts (MIN_LEASE_MS in full-lease.ts): renewed every 333 ms, lost only if
    // no renewal lands for 667 ms. Shorter, a pause of this process on a loaded machine loses it in the test.
    const LEASE_MS = 1_000;
    const { cp: first, atPage, release } = heldPublisher(() => true, undefined, { leaseMs: LEASE_MS });
    const second = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
      throw err;
    });
    // Both have seen the current epoch; the operator's `republish` reaches both.
    await Promise.all([first.start(), second.start()]);
    const before = await epoch();
    const loads = store.fullLoads;
    first.republish();
    await atPage;
    const token = await redis.get(lease);
    expect(token).not.toBeNull();
    expect(await redis.pttl(lease)).toBeGreaterThan(0);
    expect(await redis.pttl(lease)).toBeLessThanOrEqual(LEASE_MS);
    // Held past twice the lease's life, renewed: a bounded negative check (nothing to await, the point is that
    // it does not expire), sampled four times a lease.
    const HELD_MS = 2 * LEASE_MS + 100;
    for (const until = Date.now() + HELD_MS; Date.now() < until;) {
      await sleep(LEASE_MS / 4);
      expect(await redis.get(lease)).toBe(token);
    }
    second.republish();
    await second.flush();
    await second.republishing;
    expect(second.fullSkipped).toBe(1);
    expect(second.fullPublications).toBe(0);
    expect(await epoch()).toBe(before);

    release();
    await first.republishing;
    await first.flush();
    expect(first.fullPublications).toBe(1);
    const after = await epoch();
    expect(after).not.toBe(before);
    expect(await redis.exists(lease)).toBe(0);
    // The second's next round finds the epoch it was asked to replace replaced: it does not publish again.
    second.changed();
    await second.flush();
    expect(second.republishing).toBeNull();
    expect(second.fullPublications).toBe(0);
    expect(await epoch()).toBe(after);
    await source.sync();
    expect(store.fullLoads).toBe(loads + 1);
    first.stop();
    second.stop();
  });

  it("a full publication lease left by a control plane that died expires, and the next round that wants one publishes", async () => {
    const lease = fullLease(names);
    const cp = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
      throw err;
    });
    await cp.start();
    const before = (await redis.hget(names.policyMeta, "epoch"))!;
    await redis.set(lease, "a-control-plane-that-died", "PX", 400);
    cp.republish();
    await cp.flush();
    await cp.republishing;
    expect(cp.fullSkipped).toBe(1);
    expect(cp.fullPublications).toBe(0);
    // The lease expires on Redis's clock (no event to await but its absence).
    await eventually(
      () => redis.exists(lease),
      (n) => n === 0,
      5_000,
      50,
    );
    cp.changed();
    await cp.flush();
    await cp.republishing;
    await cp.flush();
    expect(cp.fullPublications).toBe(1);
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(before);
    // and changes follow on the new epoch
    const created = await newKey("after-the-takeover");
    cp.changed();
    await cp.flush();
    await source.sync();
    expect(store.key(created)?.status).toBe("active");
    cp.stop();
  });

  it("two control planes that find a bridge epoch with no full publication running publish one between them", async () => {
    const lostAt = (await redis.hget(names.policyMeta, "cursor"))!;
    await redis.del(...(await redis.keys(`${names.prefix}*`)));
    const bridge = (await new RedisPolicyBus(redis, names).bridge(lostAt, Date.now()))!;
    const cps = [0, 1].map(
      () =>
        new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
          throw err;
        }),
    );
    await Promise.all(cps.map((cp) => cp.start()));
    await Promise.all(cps.map((cp) => cp.republishing));
    await Promise.all(cps.map((cp) => cp.flush()));
    expect(cps[0]!.fullPublications + cps[1]!.fullPublications).toBe(1);
    expect(cps[0]!.fullSkipped + cps[1]!.fullSkipped).toBeGreaterThanOrEqual(1);
    expect(await redis.hget(names.policyMeta, "base")).toBeNull();
    expect(await redis.hget(names.policyMeta, "epoch")).not.toBe(bridge.epoch);
    // The one that skipped does not publish at its next round either.
    await Promise.all(cps.map((cp) => (cp.changed(), cp.flush())));
    expect(cps[0]!.fullPublications + cps[1]!.fullPublications).toBe(1);
    const fresh = new SnapshotStore();
    const follower = replicaOf(fresh);
    await follower.sync();
    expect(fresh.loaded).toBe(true);
    await follower.stop();
    for (const cp of cps) cp.stop();
    await source.sync();
  });

  it("after an upgrade, publishes in full under the new names and lets the older release's feed expire", async () => {
    // What a release before the shards had hash tags of their own left: its head and its epoch, all in `{ctl}`.
    const legacyHead = `${names.prefix}{ctl}:policy:meta`;
    const legacyShard = `${names.prefix}{ctl}:policy:0ld:k:7`;
    await redis.hset(legacyHead, { epoch: "0ld", cursor: "1:1:", seq: 0, lastId: "0-0", version: 1, at: 1 });
    await redis.hset(legacyShard, "x", '{"v":1}');
    // What a release before money changes left: head `policy:head`, the shards as now.
    const previousHead = `${names.prefix}{ctl}:policy:head`;
    const previousShard = names.policyShard("prev", "key", 7);
    await redis.hset(previousHead, { epoch: "prev", cursor: "1:1:", seq: 0, lastId: "0-0", version: 1, at: 1 });
    await redis.hset(previousShard, "x", '{"v":1}');
    await redis.del(names.policyMeta);
    // ...and a release before the recorded feed position had none.
    await sql(`DELETE FROM policy_feed_position`);
    // The new release's control plane: a process of its own, which has seen no feed under the new names (so it
    // publishes in full, where one that had would bridge).
    const upgraded = new SnapshotPublisher(db.db, new RedisPolicyBus(redis, names), 1, (err) => {
      throw err;
    });
    const hash = await newKey("after-upgrade");
    await upgraded.start();
    await source.sync();
    expect(upgraded.fullPublications).toBe(1);
    expect(upgraded.bridges).toBe(0);
    upgraded.stop();
    expect(store.key(hash)).toBeDefined();
    expect(await redis.ttl(legacyHead)).toBeGreaterThan(0);
    expect(await redis.ttl(legacyShard)).toBeGreaterThan(0);
    expect(await redis.ttl(previousHead)).toBeGreaterThan(0);
    expect(await redis.ttl(previousShard)).toBeGreaterThan(0);
  });
});
