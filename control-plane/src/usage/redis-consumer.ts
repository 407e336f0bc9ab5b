import type { Redis } from "ioredis";
import {
  checkUsageEntry,
  duplicateRedis,
  readUsageEvent,
  type UsageEvent,
  USAGE_ENTRY_FIELD,
  usageEntryEvents,
} from "@modelgate/data-plane";

export const USAGE_GROUP = "modelgate-settlers";

type Entry = [id: string, fields: string[]];

/** An entry settlement refused: not signed by a data plane (or altered since). Its events are never settled. */
export interface RefusedEntry {
  stream: string;
  id: string;
  reason: string;
  /** how many events it claimed to hold (0 when unreadable) */
  events: number;
}

/** How the entries of one read are checked before their events settle. */
export interface EntryChecks {
  /** usageEntryKey(master key): only entries signed with it settle */
  key: Buffer;
  /** the stream the entries were read from (for the refusal's record) */
  stream: string;
  /** an entry refused; called once per entry read */
  onRefused: (entry: RefusedEntry) => void;
}

/**
 * The valid usage events of a read's stream entries, in order. An entry without a valid signature is refused
 * (reported through checks.onRefused, its events dropped); an unreadable entry or a malformed event is reported
 * and dropped. Either way the entry is still acknowledged: reading it again would not make it valid.
 */
export function eventsOfEntries(
  entries: readonly Entry[],
  onError: (err: unknown) => void,
  checks: EntryChecks,
): UsageEvent[] {
  const events: UsageEvent[] = [];
  for (const [id, fields] of entries) {
    if (!fields) continue; // an entry deleted before it was claimed
    const check = checkUsageEntry(checks.key, fields);
    if (!check.ok) {
      checks.onRefused({ stream: checks.stream, id, reason: check.reason, events: claimedEvents(fields) });
      continue;
    }
    const raw = usageEntryEvents([USAGE_ENTRY_FIELD, check.json]);
    if (raw === null) {
      onError(new Error(`dropping unreadable usage entry ${id}`));
      continue;
    }
    for (const r of raw) {
      const parsed = readUsageEvent(r);
      if (parsed.success) events.push(parsed.data);
      else onError(new Error(`dropping a malformed usage event in entry ${id}`));
    }
  }
  return events;
}

/** How many events a refused entry claims to hold, for its record (never trusted for anything else). */
function claimedEvents(fields: readonly string[]): number {
  try {
    return usageEntryEvents(fields)?.length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Reads the usage stream's shards as a member of a consumer group and acknowledges an entry only after it
 * settled. Entries left pending by a consumer that died are claimed after `claimIdleMs`, so every event
 * settles (settlement is idempotent, so a claim that races a slow consumer is harmless).
 *
 * One loop per shard, each on a connection of its own: a blocking read holds its connection (on a cluster,
 * its connection to that shard's master) until something arrives, and must not hold up the other shards.
 */
export class RedisUsageConsumer {
  private stopped = false;
  private loops: Promise<void>[] = [];
  private readonly conns: Redis[];

  constructor(
    redis: Redis,
    private readonly streams: string[],
    private readonly consumer: string,
    private readonly settle: (events: UsageEvent[]) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    /** usageEntryKey(master key), and what to do with an entry that is not signed with it */
    private readonly entries: { key: Buffer; onRefused: (entry: RefusedEntry) => void },
    private readonly claimIdleMs = 30_000,
    private readonly maxSettleBatch = 2_000,
    /**
     * A shard's settlements start at most this often: what arrives meanwhile waits in the stream and goes in the
     * next transaction. A settlement costs the same handful of statements, a commit and a few Redis commands
     * however few events it holds, so under a steady trickle of traffic settling each turn's entry on its own
     * cost more control-plane, Postgres and Redis CPU per event than the events themselves. Entries are
     * acknowledged only after they settled, as before; the data planes' spend counters cover the wait. The
     * control plane sets it from MODELGATE_SETTLE_INTERVAL_MS (default 1 s).
     */
    private readonly minIntervalMs = 100,
    /** entries read at once (an entry holds a replica's turn of events) */
    private readonly readCount = 1_000,
  ) {
    this.conns = streams.map((_, i) => (i === 0 ? redis : duplicateRedis(redis)));
    for (const c of this.conns.slice(1)) c.on("error", (err: unknown) => this.onError(err));
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.streams.length; i++) await this.createGroup(this.conns[i]!, this.streams[i]!);
    this.loops = this.streams.map((stream, i) => this.run(this.conns[i]!, stream));
  }

  /** From the stream's start ("0"), so entries written before the group existed are read too. */
  private async createGroup(redis: Redis, stream: string): Promise<void> {
    try {
      await redis.xgroup("CREATE", stream, USAGE_GROUP, "0", "MKSTREAM");
    } catch (err) {
      if (!String(err).includes("BUSYGROUP")) throw err;
    }
  }

  private async run(redis: Redis, stream: string): Promise<void> {
    let lastClaim = 0;
    let lastSettle = 0;
    // Our own pending entries exist only at start (a restart under the same name) or after a failed settle or
    // acknowledgement: only then are they read first (a read of them otherwise costs a round trip per batch).
    let ownPending = true;
    while (!this.stopped) {
      try {
        if (Date.now() - lastClaim > Math.min(this.claimIdleMs, 5_000)) {
          lastClaim = Date.now();
          const claimed = (await redis.xautoclaim(
            stream,
            USAGE_GROUP,
            this.consumer,
            this.claimIdleMs,
            "0-0",
            "COUNT",
            100,
          )) as [string, Entry[]];
          await this.handle(redis, stream, claimed[1] ?? [], true);
        }
        // Our own pending entries first (left over from a failed settle), then new ones.
        if (ownPending) {
          const own = (await redis.xreadgroup(
            "GROUP",
            USAGE_GROUP,
            this.consumer,
            "COUNT",
            this.readCount,
            "STREAMS",
            stream,
            "0",
          )) as [string, Entry[]][] | null;
          if (own?.[0]?.[1].length) {
            await this.handle(redis, stream, own[0][1], true);
            continue;
          }
          ownPending = false;
        }
        const wait = lastSettle + this.minIntervalMs - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (this.stopped) break;
        const fresh = (await redis.xreadgroup(
          "GROUP",
          USAGE_GROUP,
          this.consumer,
          "COUNT",
          this.readCount,
          "BLOCK",
          1000,
          "STREAMS",
          stream,
          ">",
        )) as [string, Entry[]][] | null;
        if (fresh?.[0]?.[1].length) {
          lastSettle = Date.now();
          await this.handle(redis, stream, fresh[0][1], false);
        }
      } catch (err) {
        ownPending = true;
        if (this.stopped) break;
        // Redis lost its data (a restart without persistence, a failover to an empty replica): the group is
        // gone, and the replicas' spooled events are arriving in a new stream. Recreate it and read them: an
        // expected step of coming back, not an error to report.
        let failure = err;
        if (String(err).includes("NOGROUP")) {
          try {
            await this.createGroup(redis, stream);
            continue;
          } catch (e) {
            failure = e; // Redis went away again: waited for below like any failure
          }
        }
        this.onError(failure);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /**
   * Settles a read's entries in one transaction, then acknowledges (and deletes) them together. `again`: the
   * entries were delivered before (claimed from a consumer that died, or our own left pending by a settlement
   * or acknowledgement that failed), so their events may have settled: marked maybeSettled, they are inserted
   * with a check for their rows rather than in bulk.
   */
  private async handle(redis: Redis, stream: string, entries: Entry[], again: boolean): Promise<void> {
    if (entries.length === 0) return;
    const refused: string[] = [];
    const events = eventsOfEntries(entries, this.onError, {
      key: this.entries.key,
      stream,
      onRefused: (r) => {
        refused.push(r.id);
        this.entries.onRefused(r);
      },
    });
    // Refused entries are acknowledged (and deleted) at once, whatever happens to the rest: they are never read,
    // reported or retried again.
    if (refused.length > 0)
      await redis
        .multi()
        .xack(stream, USAGE_GROUP, ...refused)
        .xdel(stream, ...refused)
        .exec();
    if (again) for (const e of events) e.maybeSettled = true;
    // An entry holds a replica's turn of events (up to 500), so one read can hold tens of thousands: they
    // settle in transactions of a bounded size, and the entries are acknowledged once all of them did.
    for (let i = 0; i < events.length; i += this.maxSettleBatch)
      await this.settle(events.slice(i, i + this.maxSettleBatch));
    const ids = entries.map(([id]) => id);
    await redis
      .multi()
      .xack(stream, USAGE_GROUP, ...ids)
      .xdel(stream, ...ids)
      .exec();
  }

  /** Every connection the consumer reads on (the first is the one it was given). */
  get connections(): readonly Redis[] {
    return this.conns;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    for (const c of this.conns.slice(1)) c.disconnect();
  }
}
