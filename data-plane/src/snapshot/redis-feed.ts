import { randomUUID } from "node:crypto";
import type { Worker } from "node:worker_threads";
import type { Redis } from "ioredis";
import { POLICY_SHARDS, type PolicyKind, type RedisNames, versionOf } from "../contract/index.ts";
import { connectionOf, type RedisConnection, subscribeWhenReady } from "../redis/connect.ts";
import { singleFlight } from "../redis/single-flight.ts";
import { PolicyLoadWorker } from "./load-thread.ts";
import { scanShards, type ShardToRead } from "./scan.ts";
import type { SnapshotStore } from "./store.ts";

/**
 * Keeps a SnapshotStore in step with the policy feed in Redis (docs/distributed.md). A replica follows the
 * current epoch's change stream, applying each change in O(1) in order of its seq; it loads in full only at start,
 * when the control plane started a new epoch, or when it sees a gap (a seq missing: the stream was trimmed past
 * it). A full load reads the shards a bounded piece at a time (HSCAN) and swaps each shard into the store when it
 * is complete; the replica serves throughout and keeps applying the stream's changes while it loads. It hears of changes on a channel and also polls, in case a message was missed;
 * while Redis is down it keeps serving what it has. A full load's reading and table building run on a worker
 * thread by default (load-worker.ts says why); the stream is followed on the main thread.
 */
/**
 * Stream entries read and applied per round trip. Applying is synchronous, so this bounds how long the loop is
 * held when a bulk of changes arrives (a 50,000-key import at 100k keys, `bench:keys`' bulk phase: with 1,000
 * the calls overlapping it had an added p99 of +152 to +263 ms and loop lateness p99 of 37–40 ms; with 200,
 * +79 ms and 18 ms; 100 was no better than 200).
 */
const FEED_BATCH = 200;
/**
 * Applying a batch yields to the event loop (setImmediate) once it has run this long since it last did: a batch
 * whose changes make shards fold (a table rebuilt, ~1 ms each at 100k keys on a slow machine, and during a bulk
 * import many shards reach the fold threshold together) otherwise held the loop for several ms at a time.
 */
const APPLY_SLICE_MS = 2;

export class RedisPolicySource {
  private timer: NodeJS.Timeout | undefined;
  private epoch: string | null = null;
  private seq = 0;
  private lastId = "0-0";
  /** the full load in progress (it runs beside the passes that follow the stream); aborted: given up */
  private loading: { epoch: string; abort: AbortController; run: Promise<void> } | null = null;
  /** whether the epoch followed still needs a full load (at start, or after one failed) */
  private needFull = true;
  /** the control plane's cursor in the head when this replica was last current (see bridge epochs in pass) */
  private cursorSeen: string | null = null;
  /**
   * Following a bridge epoch (Redis lost the feed): whether what this replica held when it lost the feed was
   * current at the bridge's base, so that the bridge's changes make it current again.
   */
  private bridgedFromCurrent = false;
  /** the load worker (started with the first full load run there) */
  private loader: PolicyLoadWorker | null = null;
  private stopped = false;
  /**
   * A channel of this replica's own, subscribed beside the policy channel on the same connection: a PUBLISH to
   * it answers how many connections receive it, and its message proves delivery. A subscription can be dead
   * while the connection looks fine (ioredis 5.11.1 and a SUBSCRIBE during its handshake: see
   * subscribeWhenReady), and the replica then follows policy by its poll alone; this makes that visible.
   */
  private readonly pingChannel: string;
  private pingTimer: NodeJS.Timeout | undefined;
  /** when the last ping was published (0: none outstanding) and whether it came back */
  private pingSentAt = 0;
  private pingHeard = false;
  private live: boolean | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly store: SnapshotStore,
    private readonly names: RedisNames,
    private readonly pollMs = 250,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly opts: {
      scanCount?: number;
      parallel?: number;
      batch?: number;
      paceRatio?: number;
      /**
       * Where a full load reads and builds the shards: "worker" (the default: a thread of its own, whose garbage
       * collections never pause the calls being served) or "thread" (the main thread; tests that intercept the
       * client's commands).
       */
      loadIn?: "worker" | "thread";
      /** how the worker connects (the replica's URL and options); default: what `redis` itself was opened with */
      connection?: RedisConnection;
      /** how long the load worker may sit idle before it ends (load-thread.ts); default 1 s */
      workerIdleMs?: number;
      /** the load worker thread's nice value, 0–19 (load-worker.ts lowerPriority); default 0 */
      workerNice?: number;
      /**
       * whether the load worker builds its tables in SharedArrayBuffers (default) or transfers ArrayBuffers
       * (load-worker.ts says why shared)
       */
      sharedTables?: boolean;
      /** how often the subscription's liveness is checked (a PUBLISH to this replica's ping channel); default 5 s */
      subscriptionCheckMs?: number;
    } = {},
  ) {
    this.pingChannel = `${names.policyChannel}:ping:${randomUUID()}`;
  }

  /**
   * Whether the policy subscription delivers: null before the first check, then whether the last ping reached
   * this replica's subscriber connection (and the one before it was heard). For /readyz and the metrics.
   */
  get subscriptionLive(): boolean | null {
    return this.live;
  }

  /**
   * Checks the subscription once: the previous ping must have been heard, and Redis must count a receiver for a
   * new one. A subscription found dead is made again (SUBSCRIBE is idempotent); the next check says whether
   * that worked. Never throws (Redis away: not live).
   */
  async checkSubscription(): Promise<boolean> {
    const previousLost = this.pingSentAt !== 0 && !this.pingHeard;
    let receivers = 0;
    try {
      this.pingSentAt = Date.now();
      this.pingHeard = false;
      receivers = await this.redis.publish(this.pingChannel, String(this.pingSentAt));
    } catch {
      receivers = 0;
    }
    const live = receivers > 0 && !previousLost;
    if (!live && !this.stopped && this.subscriber.status === "ready")
      await this.subscriber.subscribe(this.names.policyChannel, this.pingChannel).catch(() => undefined);
    this.live = live;
    return live;
  }

  /** @internal The load worker's thread while one runs (tests). */
  get loadThread(): Worker | null {
    return this.loader?.thread ?? null;
  }

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string, message: string) => {
      if (channel === this.names.policyChannel) void this.sync();
      else if (channel === this.pingChannel && message === String(this.pingSentAt)) this.pingHeard = true;
    });
    await subscribeWhenReady(this.subscriber, this.names.policyChannel, this.pingChannel);
    await this.sync();
    this.timer = setInterval(() => void this.sync(), this.pollMs);
    this.timer.unref();
    void this.checkSubscription();
    this.pingTimer = setInterval(() => void this.checkSubscription(), this.opts.subscriptionCheckMs ?? 5_000);
    this.pingTimer.unref();
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
  readonly follow: () => Promise<void> = singleFlight(async () => {
    try {
      await this.pass();
    } catch (err) {
      this.onError(err);
    }
  });

  private async pass(): Promise<void> {
    for (;;) {
      // Stopped: no more loads (stop ended the load worker), nothing more to apply.
      if (this.stopped) return;
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
          this.loading?.abort.abort();
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
      if (this.seq < headSeq && (entries.length === 0 || !(await this.applyAll(entries)))) {
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

  /** Applies stream entries in seq order, yielding every APPLY_SLICE_MS; false at the first gap. */
  private async applyAll(entries: [string, string[]][]): Promise<boolean> {
    let sliceStart = performance.now();
    for (const [id, fields] of entries) {
      if (performance.now() - sliceStart >= APPLY_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        // stopped meanwhile: apply no more (each entry applied so far is applied whole)
        if (this.stopped) return true;
        sliceStart = performance.now();
      }
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
    // nothing to load, or a bridge epoch (never loaded: see pass), which the next pass follows; or stopped
    if (!epoch || base != null || this.stopped) return;
    this.loading?.abort.abort();
    this.epoch = epoch;
    this.seq = Number(seq);
    this.lastId = lastId ?? "0-0";
    this.needFull = true;
    const state = { epoch, abort: new AbortController(), run: Promise.resolve() };
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
   * a tombstone in a shard (an entity deleted in this epoch) is left out (ShardBuilders.putBytes). The shards are
   * read and built on the load worker (its own connection and heap) unless loadIn is "thread"; either way the
   * store swaps each in as it arrives, and the epoch is checked here before the load completes.
   */
  private async fullLoad(state: { epoch: string; abort: AbortController }, version: number, at: number): Promise<void> {
    const { epoch } = state;
    const cancelled = () => state.abort.signal.aborted || this.stopped;
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
      const shards: ShardToRead[] = [];
      for (const kind of ["account", "key"] as const)
        for (let shard = 0; shard < POLICY_SHARDS; shard++)
          shards.push({ kind, shard, key: this.names.policyShard(epoch, kind, shard) });
      const scan = { scanCount: this.opts.scanCount ?? 1_000, parallel: this.opts.parallel ?? 4, pace };
      const current = async () => (await this.redis.hget(this.names.policyMeta, "epoch")) === epoch;
      if ((this.opts.loadIn ?? "worker") === "thread") {
        await scanShards(
          this.redis,
          shards,
          { ...scan, cancelled, current },
          (kind, id, json) => load.putBytes(kind, id, json),
          (kind, shard) => load.shardDone(kind, shard),
        );
      } else {
        this.loader ??= new PolicyLoadWorker(
          this.opts.connection ?? connectionOf(this.redis),
          this.opts.workerIdleMs,
          this.opts.workerNice,
        );
        const sized = shards.map((s) => {
          const held = this.store.shard(s.kind, s.shard).table;
          return { ...s, count: held.count, bytes: held.bytes };
        });
        await this.loader.load(
          { ...scan, shards: sized, metaKey: this.names.policyMeta, epoch, shared: this.opts.sharedTables ?? true },
          (kind, shard, table, money, complete) =>
            complete ? load.swapShard(kind, shard, table, money) : load.putPartial(kind, shard, table, money),
          state.abort.signal,
        );
      }
      // A newer epoch appeared while loading: keep what was put (it is newer); the next pass loads that one.
      if (cancelled() || (await this.redis.hget(this.names.policyMeta, "epoch")) !== epoch) {
        load.abandon();
        return;
      }
      await load.finish(version, at);
      if (!cancelled() && this.epoch === epoch) this.needFull = false;
    } catch (err) {
      load.abandon();
      throw err;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.loading?.abort.abort();
    await this.loader?.terminate();
    await this.subscriber.unsubscribe(this.names.policyChannel, this.pingChannel).catch(() => undefined);
  }
}
