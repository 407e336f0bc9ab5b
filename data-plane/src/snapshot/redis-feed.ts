import type { Redis } from "ioredis";
import { POLICY_SHARDS, type PolicyKind, type RedisNames, versionOf } from "../contract/index.ts";
import type { SnapshotStore } from "./store.ts";

/**
 * Keeps a SnapshotStore in step with the policy feed in Redis (docs/distributed.md). A replica follows the
 * current epoch's change stream, applying each change in O(1) in order of its seq; it loads in full only at start,
 * when the control plane started a new epoch, or when it sees a gap (a seq missing: the stream was trimmed past
 * it). A full load reads the shards a bounded piece at a time (HSCAN), puts entities into the live store as they
 * arrive and serves throughout. It hears of changes on a channel and also polls, in case a message was missed;
 * while Redis is down it keeps serving what it has.
 */
export class RedisPolicySource {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private epoch: string | null = null;
  private seq = 0;
  private lastId = "0-0";

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly store: SnapshotStore,
    private readonly names: RedisNames,
    private readonly pollMs = 250,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly opts: { scanCount?: number; parallel?: number; batch?: number } = {},
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

  /** Catches up with the feed; one pass at a time (a request during a pass makes it run once more). */
  sync(): Promise<void> {
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
        .hmget(this.names.policyMeta, "epoch", "seq", "version", "at")
        .get(this.names.controlHeartbeat)
        .xrange(
          this.names.policyStream(this.epoch ?? "none"),
          `(${this.lastId}`,
          "+",
          "COUNT",
          this.opts.batch ?? 1_000,
        )
        .exec();
      if (!results) return;
      for (const [err] of results) if (err) throw err;
      const [epoch, seqText, versionText, atText] = results[0]![1] as (string | null)[];
      const beat = results[1]![1] as string | null;
      const at = beat ? Number((JSON.parse(beat) as { at?: unknown }).at) : NaN;
      this.store.heardControlPlane(Number.isFinite(at) ? at : null);
      // Nothing published (yet, or Redis lost its data): keep serving until the control plane publishes again.
      if (!epoch) return;
      if (epoch !== this.epoch) {
        await this.fullLoad();
        continue;
      }
      const headSeq = Number(seqText);
      const entries = results[2]![1] as [string, string[]][];
      if (this.seq < headSeq && (entries.length === 0 || !this.applyAll(entries))) {
        // A gap: the changes after ours were trimmed from the stream. Load in full.
        await this.fullLoad();
        continue;
      }
      if (entries.length >= (this.opts.batch ?? 1_000)) continue;
      if (this.seq >= headSeq) this.store.published(Number(versionText), Number(atText));
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
   * Reads the current epoch in full: the head first (its seq and stream id are where following resumes), then
   * the catalog, then every shard of accounts and keys a bounded piece at a time, a few shards in flight.
   * Each piece is put straight into the live store, so no copy of the whole set is ever built.
   */
  private async fullLoad(): Promise<void> {
    const [epoch, seq, lastId, version, at] = await this.redis.hmget(
      this.names.policyMeta,
      "epoch",
      "seq",
      "lastId",
      "version",
      "at",
    );
    if (!epoch) return;
    const load = this.store.beginFullLoad();
    try {
      const catalog = await this.redis.get(this.names.policyCatalog(epoch));
      if (catalog) load.put({ kind: "catalog", id: "", v: versionOf(catalog), json: catalog });
      const shards: [PolicyKind & ("key" | "account"), number][] = [];
      for (const kind of ["account", "key"] as const) for (let s = 0; s < POLICY_SHARDS; s++) shards.push([kind, s]);
      let next = 0;
      const worker = async () => {
        while (next < shards.length) {
          const [kind, shard] = shards[next++]!;
          const key = this.names.policyShard(epoch, kind, shard);
          let cursor = "0";
          do {
            const [c, flat] = await this.redis.hscan(key, cursor, "COUNT", this.opts.scanCount ?? 1_000);
            cursor = c;
            for (let i = 0; i + 1 < flat.length; i += 2) {
              const json = flat[i + 1]!;
              load.put({ kind, id: flat[i]!, v: versionOf(json), json });
            }
          } while (cursor !== "0");
        }
      };
      await Promise.all(Array.from({ length: this.opts.parallel ?? 4 }, worker));
      // A newer epoch appeared while loading: keep what was put (it is newer) and load that one instead.
      if ((await this.redis.hget(this.names.policyMeta, "epoch")) !== epoch) {
        load.abandon();
        return;
      }
      await load.finish(Number(version), Number(at));
      this.epoch = epoch;
      this.seq = Number(seq);
      this.lastId = lastId ?? "0-0";
    } catch (err) {
      load.abandon();
      throw err;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.subscriber.unsubscribe(this.names.policyChannel).catch(() => undefined);
  }
}
