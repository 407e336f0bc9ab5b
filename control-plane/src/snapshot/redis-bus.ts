import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import {
  entityOfMoney,
  isMoneyKind,
  POLICY_SHARDS,
  shardOf,
  type PolicyChange,
  type RedisNames,
} from "@modelgate/data-plane";
import { FULL_LEASE_MS } from "./full-lease.ts";
import type { FeedHead, FullWriter, PolicyBus } from "./publisher.ts";

// Appending a chunk of changes takes two steps, because on a Redis Cluster a change's shard and the stream live
// in different slots (RedisNames: each shard hash has a hash tag of its own, so the feed's bulk spreads over the
// masters, while the head, the stream and the catalog share `{ctl}`):
//
// 1. SHARD_WRITE, one call per shard the changes touch (all sent at once): each change is written into its
//    shard unless the shard holds a newer version. A deletion writes a tombstone `{"v":<version>}` instead of
//    removing the field, so no older version can be written over it later (a full load leaves tombstones out).
// 2. APPEND, in `{ctl}`, a chunk of changes at a time: checks that the head's epoch, cursor and seq are still
//    the ones this control plane read or its previous chunk left (fencing: nobody appended in between), writes
//    the catalog if it changed (it lives in `{ctl}`), adds one stream entry numbered seq+1 per change (with the
//    entity's JSON, whether or not step 1 wrote it: a replica ignores an older version) and moves the head.
//
// Why the order is safe: a replica's full load reads the head's seq before it reads any shard, and a change's
// shard write is done before its stream entry is appended, so every change numbered up to that seq is in the
// shards when they are read; the changes after it the replica applies from the stream. A shard may hold a
// version newer than the stream has reached (step 1 done, step 2 not yet, or another control plane's step 1):
// that is harmless, since versions only grow and a replica never applies an older version over a newer one;
// the stream entry that follows brings the same version or a newer one. A stale control plane (one that step 2
// then refuses) can have written in step 1 only versions it read committed from Postgres and only over older
// ones (the version check, tombstones included), so the shards never go back; the current control plane
// appends those changes when its cursor reaches them.
//
// A money change (contract/policy-feed.ts) is written into its entity's shard as the field `$<id>`, by the same
// rule (newer versions only). A full load reads both fields and keeps the newer figures (data-plane
// snapshot/store.ts); an entity written at the money field's version or newer carries those figures itself, so
// the money field goes (as it does with a deletion).
const SHARD_WRITE = `
local function version(s) return s and tonumber(string.match(s, '^{"v":(%d+)')) end
for i = 1, #ARGV, 3 do
  local id, v, json = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local nv = tonumber(v)
  local cv = version(redis.call('HGET', KEYS[1], id))
  if not cv or cv <= nv then
    if json == '' then json = '{"v":' .. v .. '}' end
    redis.call('HSET', KEYS[1], id, json)
    if string.byte(id, 1) ~= 36 then
      local mv = version(redis.call('HGET', KEYS[1], '$' .. id))
      if mv and mv <= nv then redis.call('HDEL', KEYS[1], '$' .. id) end
    end
  end
end
return 0`;

//    It also counts the epoch's tombstones in the head (`tombstones`, one per deletion appended), which is what
//    the control planes compact by (a new epoch, see SnapshotPublisher): the head is in `{ctl}`, so the count is
//    moved by the same script that appends the deletion, exact on a cluster too, and readable by every control plane.
const APPEND = `
local m = redis.call('HMGET', KEYS[1], 'epoch', 'cursor', 'seq', 'lastId', 'version', 'tombstones')
local seq = tonumber(m[3]) or 0
if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] or seq ~= tonumber(ARGV[8]) then return -1 end
local last = m[4] or '0-0'
local dead = tonumber(m[6]) or 0
local n = (#ARGV - 8) / 4
for i = 0, n - 1 do
  local kind, id, v, json = ARGV[9 + i * 4], ARGV[10 + i * 4], ARGV[11 + i * 4], ARGV[12 + i * 4]
  if kind == 'catalog' then
    local cur = redis.call('GET', KEYS[3])
    local cv = cur and tonumber(string.match(cur, '^{"v":(%d+)'))
    if not cv or cv <= tonumber(v) then redis.call('SET', KEYS[3], json) end
  elseif json == '' and (kind == 'key' or kind == 'account') then
    dead = dead + 1
  end
  seq = seq + 1
  last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 's', seq, 'k', kind, 'i', id, 'v', v, 'd', json)
end
local version = math.max(tonumber(m[5]) or 0, tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'cursor', ARGV[3], 'seq', seq, 'lastId', last, 'version', string.format('%d', version), 'at', ARGV[5], 'tombstones', dead)
if n > 0 then redis.call('PUBLISH', ARGV[7], seq) end
return {seq, dead}`;

// A bridge epoch's head (see RedisPolicyBus.bridge), written only where no head is: `base` is the cursor its
// stream's changes follow, which a replica compares with the cursor it was last current at.
const BRIDGE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'cursor', ARGV[2], 'base', ARGV[2], 'seq', 0, 'lastId', '0-0', 'version', 0, 'at', ARGV[3])
return 1`;

// A full publication's switch to its epoch (see beginFull), only if the marker written when it began is still
// there (a Redis that restarted empty meanwhile lost the pages written before, and the epoch is not complete: 0)
// and this control plane still holds the lease (-1: it was paused past the lease's expiry, and another may be
// publishing in full now).
const COMMIT = `
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('GET', KEYS[3]) ~= ARGV[7] then return -1 end
redis.call('DEL', KEYS[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'cursor', ARGV[2], 'seq', 0, 'lastId', '0-0', 'version', ARGV[3], 'at', ARGV[4], 'entities', ARGV[6], 'tombstones', 0)
redis.call('PUBLISH', ARGV[5], '0')
return 1`;

// The full publication lease (see beginFull): prolonged, and released, only by the holder of its token.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** The full publication lease: in `{ctl}`, the head's slot, so the commit script can check it. */
export const fullLease = (names: RedisNames): string => `${names.prefix}{ctl}:policy:full-lease`;

/** How long a full publication's begin marker lasts (a publication that died leaves it behind). */
const BEGUN_TTL_S = 24 * 3600;

/** How long an epoch's keys stay after a newer epoch became current (a replica may be loading it). */
const OLD_EPOCH_TTL_S = 120;

type Scripted = Redis & {
  policyShardWrite(key: string, ...args: string[]): Promise<unknown>;
  policyAppend(...keysAndArgs: string[]): Promise<unknown>;
  policyBridge(key: string, ...args: string[]): Promise<unknown>;
  policyCommit(meta: string, begun: string, lease: string, ...args: string[]): Promise<unknown>;
  policyLeaseRenew(lease: string, token: string, ms: string): Promise<unknown>;
  policyLeaseRelease(lease: string, token: string): Promise<unknown>;
};

/** The shard (by entity kind) and the field a key's or account's change is written to: `$<id>` for money. */
const shardField = (c: PolicyChange): ["key" | "account", string] =>
  isMoneyKind(c.kind) ? [entityOfMoney(c.kind), `$${c.id}`] : [c.kind as "key" | "account", c.id];

/** One command and its arguments (see sendAll). */
type Op = [command: string, ...args: (string | number)[]];

/**
 * Sends independent commands together: in one pipeline on a plain Redis; on a cluster, whose pipelines must keep
 * to one node, each on its own but all in flight at once (ioredis writes them without waiting for replies).
 */
async function sendAll(redis: Redis, ops: Op[]): Promise<void> {
  if (ops.length === 0) return;
  if (redis.isCluster) {
    await Promise.all(ops.map(([command, ...args]) => redis.call(command, ...args)));
    return;
  }
  const results = await redis.pipeline(ops).exec();
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}

/**
 * The feed in Redis (see RedisNames): per epoch, keys and accounts in POLICY_SHARDS hashes each (each in a slot
 * of its own on a cluster), the catalog as one small value, and a change stream; the head (policyMeta) names the
 * current epoch. Nothing here grows with the key count except the number of hash fields, and a change costs
 * Redis a few microseconds.
 */
export class RedisPolicyBus implements PolicyBus {
  private readonly redis: Scripted;
  /** the head's key names the feed in Postgres's record of where it stood (feed-position.ts) */
  readonly feed: string;

  constructor(
    redis: Redis,
    private readonly names: RedisNames,
    private readonly opts: { streamMaxLen?: number; chunk?: number; leaseMs?: number } = {},
  ) {
    // Defined commands run by EVALSHA (EVAL once per node that lacks the script), on a plain Redis and a cluster.
    redis.defineCommand("policyShardWrite", { numberOfKeys: 1, lua: SHARD_WRITE });
    redis.defineCommand("policyAppend", { numberOfKeys: 3, lua: APPEND });
    redis.defineCommand("policyBridge", { numberOfKeys: 1, lua: BRIDGE });
    redis.defineCommand("policyCommit", { numberOfKeys: 3, lua: COMMIT });
    redis.defineCommand("policyLeaseRenew", { numberOfKeys: 1, lua: RENEW });
    redis.defineCommand("policyLeaseRelease", { numberOfKeys: 1, lua: RELEASE });
    this.redis = redis as Scripted;
    this.feed = names.policyMeta;
  }

  async head(): Promise<FeedHead | null> {
    const [epoch, cursor, seq, base, tombstones, entities] = await this.redis.hmget(
      this.names.policyMeta,
      "epoch",
      "cursor",
      "seq",
      "base",
      "tombstones",
      "entities",
    );
    if (!epoch || !cursor) return null;
    const head: FeedHead = {
      epoch,
      cursor,
      seq: Number(seq ?? 0),
      tombstones: Number(tombstones ?? 0),
      entities: Number(entities ?? 0),
    };
    if (base) head.bridge = true;
    return head;
  }

  async bridge(cursor: string, at: number): Promise<FeedHead | null> {
    const epoch = randomBytes(6).toString("hex");
    const made = await this.redis.policyBridge(this.names.policyMeta, epoch, cursor, String(at));
    return Number(made) === 1 ? { epoch, cursor, seq: 0, bridge: true, tombstones: 0, entities: 0 } : null;
  }

  /** Every key of an epoch (shards, catalog, stream): what expires once another epoch is current. */
  private epochKeys(epoch: string): string[] {
    const keys = [this.names.policyCatalog(epoch), this.names.policyStream(epoch)];
    for (let s = 0; s < POLICY_SHARDS; s++)
      keys.push(this.names.policyShard(epoch, "key", s), this.names.policyShard(epoch, "account", s));
    return keys;
  }

  /** A full publication's begin marker: in `{ctl}`, the head's slot, so the commit script can check it. */
  private begun(epoch: string): string {
    return `${this.names.policyStream(epoch)}:begun`;
  }

  /**
   * One full publication at a time among the control planes: it takes a lease in `{ctl}` (SET NX PX with a token
   * of its own), renewed a third of its life apart while it runs, checked by the commit and released at the end
   * (by a script that deletes it only if it still holds the token). Another control plane that finds the lease
   * taken does not start one (null): two would each read and write every entity, and replicas could load twice.
   * If the holder dies, the lease expires and the next round that wants a full publication takes it. Also null
   * when the head no longer names `current`: one was published (or, with no head, a bridge started) meanwhile.
   */
  async beginFull(current: string | null): Promise<FullWriter | null> {
    const lease = fullLease(this.names);
    const leaseMs = this.opts.leaseMs ?? FULL_LEASE_MS; // see full-lease.ts
    const token = randomBytes(12).toString("hex");
    if ((await this.redis.set(lease, token, "PX", leaseMs, "NX")) !== "OK") return null;
    const release = () => this.redis.policyLeaseRelease(lease, token).catch(() => undefined); // else it expires
    if (((await this.head())?.epoch ?? null) !== current) {
      await release();
      return null;
    }
    const epoch = randomBytes(6).toString("hex");
    await this.redis.set(this.begun(epoch), "1", "EX", BEGUN_TTL_S);
    let lost = false;
    const renew = setInterval(() => {
      this.redis.policyLeaseRenew(lease, token, String(leaseMs)).then(
        (renewed) => void (lost ||= Number(renewed) !== 1),
        () => undefined, // Redis unreachable: the next renewal tries again, and the commit checks the lease
      );
    }, leaseMs / 3);
    renew.unref();
    const lostLease = () =>
      new Error(
        "policy feed: the full publication's lease was lost (this control plane was paused past its expiry?); the publication is abandoned and another control plane's, or the next round's, publishes",
      );
    let committed = false;
    return {
      epoch,
      close: async () => {
        clearInterval(renew);
        await release();
        // A publication that failed or was abandoned leaves its pages to expire like an old epoch.
        if (!committed)
          await sendAll(
            this.redis,
            this.epochKeys(epoch).map((key): Op => ["expire", key, OLD_EPOCH_TTL_S]),
          ).catch(() => undefined);
      },
      put: async (changes) => {
        if (lost) throw lostLease();
        // One HSET per shard touched by the page, sent together: a page costs Redis a few milliseconds in all.
        const byKey = new Map<string, string[]>();
        const ops: Op[] = [];
        for (const c of changes) {
          if (c.json === null) continue;
          if (c.kind === "catalog") {
            ops.push(["set", this.names.policyCatalog(epoch), c.json]);
            continue;
          }
          const [kind, field] = shardField(c);
          const key = this.names.policyShard(epoch, kind, shardOf(c.id));
          const fields = byKey.get(key);
          if (fields) fields.push(field, c.json);
          else byKey.set(key, [field, c.json]);
        }
        for (const [key, fields] of byKey) ops.push(["hset", key, ...fields]);
        await sendAll(this.redis, ops);
      },
      commit: async (cursor, version, entities) => {
        const old = await this.redis.hget(this.names.policyMeta, "epoch");
        const switched = await this.redis.policyCommit(
          this.names.policyMeta,
          this.begun(epoch),
          lease,
          epoch,
          cursor,
          String(version),
          String(Date.now()),
          this.names.policyChannel,
          String(entities),
          token,
        );
        if (Number(switched) === -1) throw lostLease();
        if (Number(switched) !== 1)
          throw new Error(
            "policy feed: Redis lost the full publication's pages while they were written (it restarted empty?); the epoch was not made current and is published again",
          );
        committed = true;
        // The old epoch stays readable a while for a replica in the middle of loading it, then goes.
        if (old && old !== epoch)
          await sendAll(
            this.redis,
            this.epochKeys(old).map((key): Op => ["expire", key, OLD_EPOCH_TTL_S]),
          );
        else if (!old) await this.expireLegacy();
      },
    };
  }

  /**
   * A feed an older release wrote expires like an old epoch once this release published its first: replicas of
   * that release keep serving what they hold. Head `{ctl}:policy:head`: this layout without money changes;
   * head `{ctl}:policy:meta`: every part of it under `{ctl}`.
   */
  private async expireLegacy(): Promise<void> {
    const keys: string[] = [];
    const head = `${this.names.prefix}{ctl}:policy:head`;
    const epoch = await this.redis.hget(head, "epoch");
    if (epoch) keys.push(head, ...this.epochKeys(epoch));
    const meta = `${this.names.prefix}{ctl}:policy:meta`;
    const metaEpoch = await this.redis.hget(meta, "epoch");
    if (metaEpoch) {
      const base = `${this.names.prefix}{ctl}:policy:${metaEpoch}`;
      keys.push(meta, `${base}:catalog`, `${base}:changes`);
      for (let s = 0; s < POLICY_SHARDS; s++) keys.push(`${base}:k:${s}`, `${base}:a:${s}`);
    }
    await sendAll(
      this.redis,
      keys.map((key): Op => ["expire", key, OLD_EPOCH_TTL_S]),
    );
  }

  async append(
    from: FeedHead,
    changes: PolicyChange[],
    cursor: string,
    version: number,
    publishedAt = Date.now(),
  ): Promise<FeedHead | null> {
    const chunk = this.opts.chunk ?? 100;
    const maxLen = String(this.opts.streamMaxLen ?? 100_000);
    // Step 1 for all the changes first: each into its shard (see SHARD_WRITE), one call per shard touched (at
    // most `chunk` changes each), all in flight at once; a page of thousands costs a few hundred small calls.
    const byShard = new Map<string, string[][]>();
    for (const c of changes) {
      if (c.kind === "catalog") continue;
      const [kind, field] = shardField(c);
      const key = this.names.policyShard(from.epoch, kind, shardOf(c.id));
      let calls = byShard.get(key);
      if (!calls) byShard.set(key, (calls = [[]]));
      let args = calls[calls.length - 1]!;
      if (args.length >= chunk * 3) calls.push((args = []));
      args.push(field, String(c.v), c.json ?? "");
    }
    await Promise.all(
      [...byShard].flatMap(([key, calls]) => calls.map((args) => this.redis.policyShardWrite(key, ...args))),
    );
    let head = from;
    let at = 0;
    do {
      const part = changes.slice(at, at + chunk);
      at += chunk;
      const last = at >= changes.length;
      // Step 2: the stream entries and the head, if the head is still the one the previous step left (see APPEND).
      const next = last ? cursor : head.cursor;
      const args: string[] = [
        head.epoch,
        head.cursor,
        next,
        String(last ? version : 0),
        String(publishedAt),
        maxLen,
        this.names.policyChannel,
        String(head.seq),
      ];
      for (const c of part) args.push(c.kind, c.id, String(c.v), c.json ?? "");
      const done = await this.redis.policyAppend(
        this.names.policyMeta,
        this.names.policyStream(from.epoch),
        this.names.policyCatalog(from.epoch),
        ...args,
      );
      if (!Array.isArray(done)) return null; // -1: the head moved on
      const [seq, tombstones] = done as [number, number];
      head = { ...head, cursor: next, seq, tombstones };
    } while (at < changes.length);
    return head;
  }
}
