import type { Redis } from "ioredis";
import type { UsageEvent } from "../contract/index.ts";
import { TurnBatcher } from "../redis/turn-batcher.ts";
import { batchWritesThisTurn } from "../redis/write-batch.ts";
import { signedEntryFields } from "./entry-signature.ts";
import type { UsageSpool } from "./spool.ts";

/** Where finished calls go to be settled. */
export interface UsageSink {
  /**
   * Hands an event over; never throws. A sink that can make it durable returns a promise that resolves once
   * it is (in Redis or the local spool; it never rejects): the data plane sends the answer's last byte only
   * then, so a replica killed at any moment has charged every answer a client received in full.
   */
  emit(event: UsageEvent): void | Promise<void>;
  /** Resolves once everything emitted so far has been handed over (used on shutdown). */
  flush(): Promise<void>;
}

/**
 * Embedded mode: the control plane lives in the same process, and its database (PGlite) runs on the same
 * thread as the requests. Events wait up to `delayMs` and queue up while a settlement runs, then go in one
 * transaction together: a transaction blocks the event loop for milliseconds, so one per call would hold up
 * every request behind it.
 */
export class InProcessUsageSink implements UsageSink {
  private queue: UsageEvent[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly settle: (events: UsageEvent[]) => Promise<void>,
    private readonly onError: (err: unknown, events: UsageEvent[]) => void,
    private readonly maxBatch = 500,
    private readonly delayMs = 100,
  ) {}

  emit(event: UsageEvent): void {
    this.queue.push(event);
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.delayMs)); // let the next calls' events join the batch
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      // A failed settlement (the database busy or restarting) is retried until it goes through, backing off
      // to one try every 5 s: the batch is idempotent, and dropping it would leave answered calls unbilled.
      for (let attempt = 1; ; attempt++) {
        try {
          await this.settle(batch);
          break;
        } catch (err) {
          this.onError(err, batch);
          await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, 5_000)));
        }
      }
    }
    this.running = null;
  }

  async flush(): Promise<void> {
    while (this.running) await this.running;
  }
}

/**
 * Distributed mode: a Redis Stream read by the control plane's consumer group. The events of one event-loop
 * turn go as one stream entry (see USAGE_ENTRY_FIELD). While Redis cannot take an entry, its events go to
 * the local disk spool instead, and a replay loop moves the backlog to Redis once it is back (the control
 * plane settles by request id, so a replayed duplicate is harmless). Nothing is dropped.
 *
 * An event Redis accepted is not settled yet: if Redis then restarts without persistence (or fails over to
 * a replica that had not received it), the entry is gone. So the sink keeps what Redis accepted and the
 * control plane has not settled yet, for at most `retainMs` and `retainMaxChars` of JSON, and, when it sees
 * a different Redis server run id after a reconnect, sends those events again. Settlement ignores the ones
 * that had settled already.
 *
 * Every entry is signed (entry-signature.ts, with `entryKey`), whether sent at once, replayed from the spool or
 * resent: the control plane settles no entry without a valid signature.
 */
export class RedisUsageSink implements UsageSink {
  private inflight = new Set<Promise<unknown>>();
  private readonly batch: TurnBatcher<UsageEvent>;
  private timer: NodeJS.Timeout | null = null;
  /**
   * Entries Redis accepted, oldest first, from index `head` on, kept as the JSON they were sent as: under
   * load that is hundreds of thousands of events, and one string per entry takes a fraction of the memory
   * the event objects would.
   */
  private recent: { at: number; id: string; json: string }[] = [];
  private head = 0;
  /** characters of JSON retained, from `head` on */
  private retainedChars = 0;
  private runId: string | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly stream: string,
    /** usageEntryKey(master key): signs each entry */
    private readonly entryKey: Buffer,
    private readonly spool: UsageSpool,
    private readonly onError: (err: unknown) => void,
    replayEveryMs = 1_000,
    private readonly retainMs = 30_000,
    private readonly onResend: (count: number) => void = () => undefined,
    private readonly maxEntryEvents = 500,
    /** retention never holds more than this many characters of JSON (the oldest go first); default 64 Mi */
    private readonly retainMaxChars = 64 * 1024 * 1024,
  ) {
    // The answer's last byte waits for its event (see UsageSink.emit): the events of one event-loop turn go
    // as one stream entry at the turn's end, so under load one XADD carries many calls, and a quiet replica
    // pays one round trip to Redis on the answer's end.
    this.batch = new TurnBatcher((_, events) => this.send(events));
    this.timer = setInterval(() => {
      void this.replay().catch(this.onError);
      void this.forgetSettled().catch(this.onError);
    }, replayEveryMs);
    this.timer.unref();
    redis.on("ready", () => void this.checkServer());
    if (redis.status === "ready") void this.checkServer();
  }

  emit(event: UsageEvent): Promise<void> {
    return this.batch.add("", event).catch(() => undefined);
  }

  private send(events: UsageEvent[]): Promise<void> {
    const sends: Promise<void>[] = [];
    batchWritesThisTurn(this.redis);
    for (let i = 0; i < events.length; i += this.maxEntryEvents) {
      const entry = events.slice(i, i + this.maxEntryEvents);
      const json = JSON.stringify(entry);
      const p = this.redis
        .xadd(this.stream, "*", ...signedEntryFields(this.entryKey, json))
        .then(
          (id) => this.remember(id, json),
          (err) => {
            this.onError(err);
            // Written to the spool file before the answers they belong to are let finish.
            return this.spool.appendNow(entry);
          },
        )
        .finally(() => this.inflight.delete(p));
      this.inflight.add(p);
      sends.push(p);
    }
    return Promise.all(sends).then(() => undefined);
  }

  /** Moves spooled events to Redis; returns how many went. */
  async replay(): Promise<number> {
    if ((await this.spool.backlogBytes()) === 0) return 0;
    const r = await this.spool.replay(async (batch) => {
      // A spooled event's first XADD failed, but may have reached Redis all the same (a timeout after the write).
      const json = JSON.stringify(batch.map(resent));
      this.remember(await this.redis.xadd(this.stream, "*", ...signedEntryFields(this.entryKey, json)), json);
    });
    return r.sent;
  }

  private remember(id: string | null, json: string): void {
    const now = Date.now();
    this.recent.push({ at: now, id: id ?? "0-0", json });
    this.retainedChars += json.length;
    this.forget((r) => r.at < now - this.retainMs || this.retainedChars > this.retainMaxChars);
  }

  /** Drops retained entries from the oldest on while `done` says so. */
  private forget(done: (r: { at: number; id: string }) => boolean): void {
    while (this.head < this.recent.length && done(this.recent[this.head]!))
      this.retainedChars -= this.recent[this.head++]!.json.length;
    if (this.head > 1024 && this.head * 2 > this.recent.length) {
      this.recent = this.recent.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Forgets the entries the control plane has settled: it deletes an entry from the stream once settled, so
   * every retained entry older than the stream's first one is settled (and all of them, when it is empty).
   * Without this the retention holds `retainMs` of traffic, a lot of memory at thousands of calls a second.
   */
  async forgetSettled(): Promise<void> {
    if (this.head === this.recent.length || this.runId === null) return;
    // Only what was retained before the read can be judged by it (a later entry may be in the stream unseen).
    const last = this.recent[this.recent.length - 1]!;
    // The read and the server's identity in one pipeline, so both come from one server: a Redis that restarted
    // empty must not pass for one that settled everything (checkServer resends to it instead).
    // (On a Redis Cluster a pipeline goes to the master of its keys' slot, INFO included: the stream's master.)
    const replies = await this.redis.pipeline().xrange(this.stream, "-", "+", "COUNT", 1).info("server").exec();
    const [rangeReply, infoReply] = replies ?? [];
    if (infoReply?.[0] || rangeReply?.[0]) throw infoReply?.[0] ?? rangeReply?.[0];
    const runId = /run_id:(\w+)/.exec(infoReply![1] as string)?.[1];
    if (runId !== this.runId) {
      // Another server holds the stream now (a restart, or a cluster failover, which emits no new "ready"):
      // resend what it may not have.
      if (runId !== undefined) this.adopt(runId);
      return;
    }
    const first = (rangeReply![1] as [string, string[]][])[0]?.[0];
    let judged = true;
    this.forget((r) => {
      const settled = judged && (first === undefined || streamIdLess(r.id, first));
      if (r === last) judged = false;
      return settled;
    });
  }

  /** Entries kept for a resend after a Redis restart (for tests and introspection). */
  get retainedEntries(): number {
    return this.recent.length - this.head;
  }

  /**
   * After each (re)connect: a different server run id means Redis restarted and may have lost entries. The
   * id is the stream's own server's (on a cluster, the master of the stream's slot): asked in a pipeline
   * with a read of the stream.
   */
  private async checkServer(): Promise<void> {
    let id: string | undefined;
    try {
      const replies = await this.redis.pipeline().exists(this.stream).info("server").exec();
      const info = replies?.[1];
      if (info?.[0]) throw info[0];
      id = /run_id:(\w+)/.exec(info?.[1] as string)?.[1];
    } catch (err) {
      this.onError(err);
      return;
    }
    if (id !== undefined) this.adopt(id);
  }

  /** Takes `id` as the stream's server; if it is another than before, resends the retained events to it. */
  private adopt(id: string): void {
    const previous = this.runId;
    this.runId = id;
    if (previous === null || previous === id) return;
    const cutoff = Date.now() - this.retainMs;
    const resend = this.recent
      .slice(this.head)
      .filter((r) => r.at >= cutoff)
      .flatMap((r) => (JSON.parse(r.json) as UsageEvent[]).map(resent));
    this.recent = [];
    this.head = 0;
    this.retainedChars = 0;
    this.onResend(resend.length);
    for (const e of resend) this.emit(e);
  }

  async flush(): Promise<void> {
    await this.batch.flush();
    await Promise.all([...this.inflight]);
    await this.spool.flush();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    await this.replay().catch(() => 0);
    await this.spool.close();
  }
}

/** An event sent again, which may have settled already (see UsageEvent.maybeSettled). */
const resent = (e: UsageEvent): UsageEvent => (e.maybeSettled ? e : { ...e, maybeSettled: true });

/** Stream ids ("<ms>-<seq>") in Redis's order. */
export function streamIdLess(a: string, b: string): boolean {
  const i = a.indexOf("-");
  const j = b.indexOf("-");
  const ams = Number(a.slice(0, i));
  const bms = Number(b.slice(0, j));
  return ams !== bms ? ams < bms : Number(a.slice(i + 1)) < Number(b.slice(j + 1));
}
