import { wholeNumberEnv } from "../env.ts";

// Every Redis key and channel modelgate uses, under one prefix (MODELGATE_REDIS_PREFIX), so several
// deployments or test runs can share one Redis without seeing each other.
//
// Redis Cluster: the keys one command or script touches must share a hash slot, so each group carries a
// hash tag (the part in braces decides the slot). The policy feed's head, channels, change stream, catalog and
// the control plane's heartbeat share `{ctl}`: one script moves the head and appends the stream entries (and
// writes the catalog) together, and replicas read the head, the heartbeat and the stream in one pipeline. The
// feed's shard hashes, which hold every key and account (the bulk of the feed), each carry a tag of their own,
// `{policy:<epoch>:<k|a>:<shard>}`, so the 512 of an epoch spread over all the masters;
// a change is written into its shard by a small script of that shard's own before its stream entry is appended
// (control-plane/src/snapshot/redis-bus.ts says why that order is safe). Each usage stream shard after the
// first has its own `{usage-<n>}` (so the shards spread over the masters), and the rate-limit and spend keys
// `{acct:<id>}` (ratelimit/redis.ts, billing/spend-redis.ts).
//
// The head is `policy:feed` (it was `policy:head` before money changes had a kind and a shard field of their own,
// and `policy:meta` while the shards lived in `{ctl}`): a control plane of this version finds no head under the
// new name and publishes a new epoch in full, and a replica of an older version never sees an epoch whose stream
// holds kinds it does not know or whose shards it would look for under the old names.

export interface RedisNames {
  /**
   * The policy feed's head (a hash): epoch (which set of entity hashes is current), seq (changes appended in
   * this epoch), lastId (the stream id of the last one), version (highest entity version), at (when the
   * control plane last published or confirmed it is current), cursor (the control plane's Postgres position).
   */
  policyMeta: string;
  /** a change was appended (message: its seq); replicas also poll, in case a message was missed */
  policyChannel: string;
  /**
   * the hash of one shard of keys or accounts in an epoch (a hash tag of its own: the shards spread over a
   * cluster's masters); a deleted entity stays as a tombstone `{"v":<version>}` until the next epoch. A field
   * `$<id>` holds the entity's newest money change when it is newer than the entity's own field.
   */
  policyShard(epoch: string, kind: "key" | "account", shard: number): string;
  /** the model catalog of an epoch (one small JSON value) */
  policyCatalog(epoch: string): string;
  /** the epoch's change log (a stream, trimmed to its last ~MAXLEN entries) */
  policyStream(epoch: string): string;
  changedChannel: string;
  /** the control plane's heartbeat (its clock and pid, refreshed every second, expiring): /readyz shows its age */
  controlHeartbeat: string;
  /**
   * Replicas' circuit-breaker reports (a hash: replica identity → {"at", "states"}), written every few seconds
   * off the request path, so the control plane can alert operators when an upstream's breaker opens.
   */
  breakerReports: string;
  /**
   * Pooled upstream keys' states (a hash: upstream NUL key id → {"reason"} when disabled, {"until"} when resting
   * after a 429), shared by the replicas (upstreams/key-pool/health.ts); the control plane deletes a key's field
   * when an operator enables it.
   */
  keyStates: string;
  /**
   * a key's state changed in keyStates (message: its field): replicas read the hash again at once rather than at
   * their next poll, and the control plane reads the disables (keyEvents) at once
   */
  keyStatesChannel: string;
  /** keys a replica disabled (a list of {"upstream","key","reason","at"}), for the control plane to record */
  keyEvents: string;
  /** the usage stream's first shard (the only one unless MODELGATE_USAGE_SHARDS says more) */
  usageStream: string;
  prefix: string;
}

export const redisNames = (prefix = process.env.MODELGATE_REDIS_PREFIX ?? "modelgate:"): RedisNames => ({
  prefix,
  policyMeta: `${prefix}{ctl}:policy:feed`,
  policyChannel: `${prefix}{ctl}:policy:changed`,
  policyShard: (epoch, kind, shard) => `${prefix}{policy:${epoch}:${kind === "key" ? "k" : "a"}:${shard}}`,
  policyCatalog: (epoch) => `${prefix}{ctl}:policy:${epoch}:catalog`,
  policyStream: (epoch) => `${prefix}{ctl}:policy:${epoch}:changes`,
  changedChannel: `${prefix}{ctl}:control:changed`,
  controlHeartbeat: `${prefix}{ctl}:control:heartbeat`,
  breakerReports: `${prefix}{ctl}:breakers`,
  keyStates: `${prefix}{ctl}:upstream-keys:states`,
  keyStatesChannel: `${prefix}{ctl}:upstream-keys:changed`,
  keyEvents: `${prefix}{ctl}:upstream-keys:events`,
  usageStream: usageShard(prefix, 0),
});

/**
 * The name of usage stream shard `n` (0-based). Shard 0 keeps the name the single stream always had, so
 * an upgrade leaves no entry unread.
 */
export const usageShard = (prefix: string, n: number): string =>
  n === 0 ? `${prefix}usage` : `${prefix}usage:{usage-${n}}`;

/** Every usage stream shard's name: the control plane reads them all. */
export const usageShards = (prefix: string, count: number): string[] =>
  Array.from({ length: Math.max(1, count) }, (_, n) => usageShard(prefix, n));

/**
 * The shard a data-plane replica writes its usage to: a stable hash of its identity, so a replica's entries
 * (and its retention, which judges settlement by its shard's first entry) stay in one stream.
 */
export function usageShardFor(identity: string, count: number): number {
  let h = 2166136261;
  for (let i = 0; i < identity.length; i++) h = Math.imul(h ^ identity.charCodeAt(i), 16777619);
  return (h >>> 0) % Math.max(1, count);
}

/** MODELGATE_USAGE_SHARDS: how many usage stream shards (1–256, default 1); every process must agree. */
export function usageShardCount(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumberEnv(env, "MODELGATE_USAGE_SHARDS", 1, { unit: "shards", min: 1, max: 256 });
}
