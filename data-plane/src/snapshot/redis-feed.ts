import type { Redis } from "ioredis";
import { POLICY_SHARDS, type PolicyKind, type RedisNames, versionOf } from "../contract/index.ts";
import type { SnapshotStore } from "./store.ts";

/**
 * Keeps a SnapshotStore in step with the policy feed in Redis (docs/distributed.md). A replica follows the
 * current epoch's change stream, applying each change in O(1) in order of its seq; it loads in full only at start,
 * when the control plane started a new epoch, or when it sees a gap (a seq missing: the stream was trimmed past
 * it). A full load reads the shards a bounded piece at a time (HSCAN) and swaps each shard into the store when it
 * is complete; the replica serves throughout and keeps applying the stream's changes while it loads. It hears of changes on a channel and also polls, in case a message was missed;
 * while Redis is down it keeps serving what it has.
 */
/**
 * Stream entries read and applied per round trip. Applying is synchronous, so this bounds how long the loop is
 * held when a bulk of changes arrives (a 50,000-key import at 100k keys, `bench:keys`' bulk phase: with 1,000
 * the calls overlapping it had an added p99 of +152 to +263 ms and loop lateness p99 of 37–40 ms; with 200,
 * +79 ms and 18 ms; 100 was no better than 200).
 */
const FEED_BATCH = 200;

export class RedisPolicySource {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private epoch: string | null = null;
  private seq = 0;
  private lastId = "0-0";
  /** the full load in progress (it runs beside the passes that follow the stream) */
  private loading: { epoch: string; cancelled: boolean; run: Promise<void> } | null = null;
  /** whether the epoch followed still needs a full load (at start, or after one failed) */
  private needFull = true;
  /** the control plane's cursor in the head when this replica was last current (see bridge epochs in pass) */
  private cursorSeen: string | null = null;
  /**
   * Following a bridge epoch (Redis lost the feed): whether what this replica held when it lost the feed was
   * current at the bridge's base, so that the bridge's changes make it current again.
   */
  private bridgedFromCurrent = false;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly store: SnapshotStore,
    private readonly names: RedisNames,
    private readonly pollMs = 250,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly opts: { scanCount?: number; parallel?: number; batch?: number; paceRatio?: number } = {},
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string) => {
      if (channel === this.names.policyChannel) void this.sync();
    });
    await this.subscriber.subscribe(this.names.policyChannel);
    await this.sync();
    this.timer = setInterval(() => void this.sync(), this.pollMs);
    this.timer.unref();
  }

  /** Catches up with the feed, a full load included if one is running (passes keep following it meanwhile). */
  async sync(): Promise<void> {
    await this.follow();
    while (this.loading) {
      await this.loading.run;
      await this.follow();
    }
  }

  /**
   * Applies what the change stream holds now, without waiting for a full load in progress (it keeps running).
   * One pass at a time (a request during a pass makes it run once more).
   */
  follow(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.onError(err);
        }
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(): Promise<void> {
    for (;;) {
      // The head, the control plane's heartbeat and the next changes of the epoch held, in one round trip.
      const results = await this.redis
        .pipeline()
        .hmget(this.names.policyMeta, "epoch", "seq", "version", "at", "cursor", "base")
        .get(this.names.controlHeartbeat)
        .xrange(
          this.names.policyStream(this.epoch ?? "none"),
          `(${this.lastId}`,
          "+",
          "COUNT",
          this.opts.batch ?? FEED_BATCH,
        )
        .exec();
      if (!results) return;
      for (const [err] of results) if (err) throw err;
      const [epoch, seqText, versionText, atText, cursor, base] = results[0]![1] as (string | null)[];
      const beat = results[1]![1] as string | null;
      const at = beat ? Number((JSON.parse(beat) as { at?: unknown }).at) : NaN;
      this.store.heardControlPlane(Number.isFinite(at) ? at : null);
      // Nothing published (yet, or Redis lost its data): keep serving until the control plane publishes again.
      if (!epoch) return;
      // A bridge epoch (a head with a base): Redis lost the feed and the control plane appends the changes after
      // the lost feed's cursor `base` here while its full publication is written beside it. Its shards hold only
      // those changes, so it is never loaded: a replica that holds policy follows its stream on top of that
      // (versions only grow, so applying them is always safe), and counts as current only if it was current at
      // `base` (it then misses nothing); one that holds nothing yet waits for the full epoch.
      if (base != null) {
        if (epoch !== this.epoch) {
          if (!this.store.loaded) return;
          this.bridgedFromCurrent = this.loading === null && !this.needFull && this.cursorSeen === base;
          if (this.loading) this.loading.cancelled = true;
          this.epoch = epoch;
          this.seq = 0;
          this.lastId = "0-0";
          this.needFull = false;
          continue;
        }
      } else if (epoch !== this.epoch || (this.needFull && !this.loading)) {
        await this.startFullLoad();
        continue;
      }
      const headSeq = Number(seqText);
      const entries = results[2]![1] as [string, string[]][];
      if (this.seq < headSeq && (entries.length === 0 || !this.applyAll(entries))) {
        // A gap in a bridge: wait for the full epoch (the bridge cannot be loaded).
        if (base != null) {
          this.bridgedFromCurrent = false;
          return;
        }
        // A gap: the changes after ours were trimmed from the stream. Load in full.
        await this.startFullLoad();
        continue;
      }
      if (entries.length >= (this.opts.batch ?? FEED_BATCH)) continue;
      // Current: unless a full load is still filling in the rest of the epoch.
      if (this.seq >= headSeq && !this.loading && (base == null || this.bridgedFromCurrent)) {
        this.store.published(Number(versionText), Number(atText));
        this.cursorSeen = cursor ?? null;
      }
      return;
    }
  }

  /** Applies stream entries in seq order; false at the first gap. */
  private applyAll(entries: [string, string[]][]): boolean {
    for (const [id, fields] of entries) {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
      const seq = Number(f.s);
      if (seq <= this.seq) continue; // seen already (a replay after a full load)
      if (seq !== this.seq + 1) return false;
      const kind = f.k as PolicyKind;
      this.store.applyChange({ kind, id: f.i ?? "", v: Number(f.v), json: f.d ? f.d : null });
      this.seq = seq;
      this.lastId = id;
    }
    return true;
  }

  /**
   * Starts loading the current epoch in full (abandoning a load already running): the head is read first, and
   * its seq and stream id are where following resumes at once, so changes appended while the load runs are
   * applied as they come (the store keeps them where they are newer than what the load reads).
   */
  private async startFullLoad(): Promise<void> {
    const [epoch, seq, lastId, version, at, base] = await this.redis.hmget(
      this.names.policyMeta,
      "epoch",
      "seq",
      "lastId",
      "version",
      "at",
      "base",
    );
    // nothing to load, or a bridge epoch (never loaded: see pass), which the next pass follows
    if (!epoch || base != null) return;
    if (this.loading) this.loading.cancelled = true;
    this.epoch = epoch;
    this.seq = Number(seq);
    this.lastId = lastId ?? "0-0";
    this.needFull = true;
    const state = { epoch, cancelled: false, run: Promise.resolve() };
    state.run = this.fullLoad(state, Number(version), Number(at))
      .catch((err: unknown) => this.onError(err))
      .finally(() => {
        if (this.loading === state) this.loading = null;
      });
    this.loading = state;
  }

  /**
   * Reads an epoch in full: the catalog, then every shard of accounts and keys a bounded piece at a time
   * (HSCAN, as bytes: nothing per entity lands on the JavaScript heap), a few shards in flight. Each shard's
   * table is swapped into the store when its last piece arrived, so no copy of the whole set is ever built.
   * Every command here names one key (on a Redis Cluster each shard is read from the master holding its slot);
   * a tombstone in a shard (an entity deleted in this epoch) is left out (FullLoad.putBytes).
   */
  private async fullLoad(state: { epoch: string; cancelled: boolean }, version: number, at: number): Promise<void> {
    const { epoch } = state;
    // A reload while serving is paced: one piece in flight, then a pause as long as that piece took (read,
    // Redis's reply, putting it), so the load takes at most about half of the replica's and Redis's time and
    // the calls it is serving meanwhile keep theirs. Measured at 1M keys on two cores, an unpaced reload
    // (four pieces in flight) saturated both and calls overlapping it reached a p99 of ~0.9 s. The first load
    // (nothing served yet) runs flat out.
    const pace = this.store.fullLoads > 0 ? (this.opts.paceRatio ?? 1) : 0;
    const load = this.store.beginFullLoad();
    try {
      const catalog = await this.redis.get(this.names.policyCatalog(epoch));
      if (catalog) load.put({ kind: "catalog", id: "", v: versionOf(catalog), json: catalog });
      const shards: ["key" | "account", number][] = [];
      for (const kind of ["account", "key"] as const) for (let s = 0; s < POLICY_SHARDS; s++) shards.push([kind, s]);
      let next = 0;
      const worker = async () => {
        while (next < shards.length && !state.cancelled) {
          const [kind, shard] = shards[next++]!;
          const key = this.names.policyShard(epoch, kind, shard);
          let cursor = "0";
          do {
            const started = performance.now();
            const [c, flat] = await this.redis.hscanBuffer(key, cursor, "COUNT", this.opts.scanCount ?? 1_000);
            if (state.cancelled) return;
            cursor = c.toString();
            for (let i = 0; i + 1 < flat.length; i += 2) load.putBytes(kind, flat[i]!, flat[i + 1]!);
            if (pace > 0) await pause((performance.now() - started) * pace);
          } while (cursor !== "0");
          load.shardDone(kind, shard);
        }
      };
      await Promise.all(Array.from({ length: pace > 0 ? 1 : (this.opts.parallel ?? 4) }, worker));
      // A newer epoch appeared while loading: keep what was put (it is newer); the next pass loads that one.
      if (state.cancelled || (await this.redis.hget(this.names.policyMeta, "epoch")) !== epoch) {
        load.abandon();
        return;
      }
      await load.finish(version, at);
      if (!state.cancelled && this.epoch === epoch) this.needFull = false;
    } catch (err) {
      load.abandon();
      throw err;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.loading) this.loading.cancelled = true;
    await this.subscriber.unsubscribe(this.names.policyChannel).catch(() => undefined);
  }
}

/**
 * Waits at least `ms` of real time. A timer alone may fire early: libuv measures its start from the loop's
 * cached clock (stale by however long the current turn has run) in whole milliseconds.
 */
async function pause(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now())
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(left))));
}
