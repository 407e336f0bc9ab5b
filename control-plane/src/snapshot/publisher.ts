import { type BudgetCalendar, entityJson, type PolicyChange } from "@modelgate/data-plane";
import { controlCalendar } from "../budgets/calendar.ts";
import type { Database } from "../db/client.ts";
import { buildCatalog } from "./catalog.ts";
import { COMPACT_TOMBSTONES, compactionThreshold } from "./compaction.ts";
import { withBudgets } from "./feed-budgets.ts";
import { type BridgeBase, bridgeBase, recordFeedPosition } from "./feed-position.ts";
import {
  type ChangePage,
  cursorFromElsewhere,
  readAll,
  readBudgeted,
  readChanges,
  type ReadChange,
} from "./feed-sql.ts";

/** Where the published feed stands: its epoch (one full publication and the changes after it), cursor and seq. */
export interface FeedHead {
  epoch: string;
  /** the Postgres position (a pg_snapshot's text) the published changes reach */
  cursor: string;
  /** changes appended to the epoch so far: an append names it, so no other append lands in between */
  seq: number;
  /** a bridge epoch (see PolicyBus.bridge): changes only, its full publication still to come */
  bridge?: boolean;
  /**
   * deletions appended to the epoch, each a tombstone in its shard (in-process: a deletion the store remembers);
   * what compaction counts (absent: not counted)
   */
  tombstones?: number;
  /** keys and accounts the epoch's full publication wrote (0 for a bridge) */
  entities?: number;
}

/** A full publication in progress: pages of entities, then the switch to it. */
export interface FullWriter {
  /** the epoch it writes */
  readonly epoch: string;
  put(changes: PolicyChange[]): Promise<void>;
  /** makes the publication current; `entities`: the keys and accounts it wrote */
  commit(cursor: string, version: number, entities: number): Promise<void>;
  /** ends it, committed or not (lets another control plane publish in full) */
  close(): Promise<void>;
}

/** Where policy goes: straight into the data plane's store (embedded) or to Redis (distributed). */
export interface PolicyBus {
  /** the published feed's head, or null when nothing is published (Redis is new or lost its data) */
  head(): Promise<FeedHead | null>;
  /**
   * Starts a full publication to replace the epoch `current` (null: no head): it becomes current only at commit,
   * so readers keep the old one until then. Null when another control plane is running one (one at a time: Redis
   * holds a lease for it) or the head no longer names `current` (one was published meanwhile).
   */
  beginFull(current: string | null): Promise<FullWriter | null>;
  /**
   * Appends changes after `from` and moves the cursor to `cursor`, only if the head is still `from` (its epoch,
   * cursor and seq): returns the head it left, or null when another control plane appended or published
   * meanwhile (read again). Several appends in a row, each from the head the previous one returned, with the
   * cursor kept until the last, publish one read of many changes. With no changes it only says the feed is current.
   */
  append(
    from: FeedHead,
    changes: PolicyChange[],
    cursor: string,
    version: number,
    at?: number,
  ): Promise<FeedHead | null>;
  /**
   * When nothing is published (Redis lost the feed): starts a *bridge* epoch, a head with no shards behind it
   * whose stream carries the changes after `cursor` (a cursor the lost feed had reached), only if still no
   * head exists; null otherwise. Replicas that were current at that cursor follow it (a revocation reaches
   * them at once) until the full publication running beside it is current. Absent: changes wait for that.
   */
  bridge?(cursor: string, at: number): Promise<FeedHead | null>;
  /**
   * The feed's name in Postgres's record of where it stood (feed-position.ts), which every round that moved
   * the cursor updates, so that a control plane that never saw a lost feed can bridge it. Absent: not recorded.
   */
  readonly feed?: string;
}

/**
 * Publishes policy as changes. Each round reads only what changed since the published cursor (the policy_changes
 * table, kept by triggers) and appends it: a revoked key costs one small read and one Redis script, whatever the
 * key count. However many changed at once (a bulk import, a mass revocation), they are read from one snapshot and
 * appended a page of `maxChanges` at a time, each page from the head the previous one left, the cursor moving to
 * that snapshot with the last page. A full publication (streamed a page at a time) happens only when nothing is
 * published yet or the published cursor belongs to another database (changes wait for it: there is no usable
 * epoch to append them to), or when asked for (`republish`: it is written beside the current epoch while rounds
 * keep appending changes to that one, and changes after its snapshot follow it once it is current), or to compact
 * the current epoch's tombstones (see compact).
 *
 * Rounds coalesce: however many writes happen in a burst, one round runs per `debounceMs`, never two at once.
 * `flush()` resolves once every change requested so far is published.
 */
export class SnapshotPublisher {
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private waiters: (() => void)[] = [];
  private settleTimer: NodeJS.Timeout | null = null;
  private checkedCursor = false;
  /** time zones of budgeted entities, and when the last round looked at their calendar days */
  private zones: Set<string> | null = null;
  private lastRoundAt = 0;
  /** full publications committed (a round's mark of turned-over days counts only within one epoch) */
  private commits = 0;
  /** full publications so far (for tests and the benchmark) */
  fullPublications = 0;
  /**
   * A full publication wanted (republish, a bridge, compaction) to replace the epoch named (undefined: whichever
   * the next round finds), and the one running beside the rounds. A publication another control plane commits
   * meanwhile satisfies it: the head then names another epoch.
   */
  private wanted: { epoch?: string } | null = null;
  private fullRun: Promise<void> | null = null;
  /** the epoch of the newest head this control plane read */
  private seenEpoch: string | undefined;
  /** full publications not started: another control plane held the lease, or had replaced the epoch (for tests) */
  fullSkipped = 0;
  /** the cursor of the newest head this control plane read, appended or committed (what a bridge starts from) */
  private lastCursor: string | null = null;
  /** bridge epochs started (for tests and the benchmark) */
  bridges = 0;
  /** full publications started to compact an epoch's tombstones (for tests) */
  compactions = 0;

  constructor(
    private readonly db: Database,
    private readonly bus: PolicyBus,
    private readonly debounceMs = 25,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly opts: {
      /** changes read and appended per page (a round of more appends several pages) */
      maxChanges?: number;
      /** entities per page of a full publication */
      pageSize?: number;
      /** test hook: awaited before each page of a full publication is written */
      beforeFullPage?: () => Promise<void>;
      calendar?: BudgetCalendar;
      /** every round's cost (ms per step) and size, for a log line when it was slow */
      onRound?: (r: { readMs: number; prepareMs: number; appendMs: number; changes: number }) => void;
      /** tombstones an epoch may hold before it is compacted (see compaction.ts; 0: never) */
      compactTombstones?: number;
      /** ... or this share of the entities its full publication wrote, if more (tests set 0) */
      compactShare?: number;
      /** told when a compaction starts (for a log line) */
      onCompact?: (head: FeedHead, threshold: number) => void;
      /** told when a bridge epoch starts, and from which cursor (for a log line) */
      onBridge?: (head: FeedHead, base: BridgeBase) => void;
    } = {},
  ) {}

  private get calendar(): BudgetCalendar {
    return this.opts.calendar ?? controlCalendar;
  }

  async start(): Promise<void> {
    await this.round();
    // Refused (another control plane appended first): read again, as run() would.
    if (this.dirty) this.changed();
  }

  /**
   * Usage was settled: balances and spend moved. Only the accounts and keys it touched are published (their
   * settled figures), at most once per `settledEveryMs`: the data planes' spend counters cover unsettled spend.
   */
  settled = (settledEveryMs = 1_000): void => {
    this.settleTimer ??= setTimeout(() => {
      this.settleTimer = null;
      this.changed();
    }, settledEveryMs);
  };

  changed = (): void => {
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.run();
    }, this.debounceMs);
  };

  /**
   * Asks for a full publication (a new epoch) written beside the current one: rounds keep appending changes to
   * the current epoch meanwhile. For an operator (PUBLISH control:changed republish) or a test.
   */
  republish(): void {
    this.wanted = { epoch: this.seenEpoch };
    this.changed();
  }

  /** The full publication running beside the rounds, if any (resolves when it is current or failed). */
  get republishing(): Promise<void> | null {
    return this.fullRun;
  }

  /**
   * Resolves once every change asked for so far is published (the rounds running stop: a failure goes to
   * onError). During a bulk round that includes the bulk, though changes asked for meanwhile reach the feed
   * between its pages.
   */
  flush(): Promise<void> {
    if (!this.dirty && !this.running && !this.timer) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        void this.run();
      } else if (!this.running) void this.run(); // work left with none scheduled: run it rather than wait forever
    });
  }

  private async run(): Promise<void> {
    if (this.running) {
      await this.running;
      if (this.dirty && !this.timer) return this.run();
      return;
    }
    this.running = (async () => {
      while (this.dirty) {
        this.dirty = false;
        try {
          await this.round();
        } catch (err) {
          this.onError(err);
        }
      }
    })();
    await this.running;
    this.running = null;
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }

  private async round(): Promise<void> {
    // The feed is current as of this moment (before anything is read): what replicas report as its age.
    const startedAt = Date.now();
    let head = await this.bus.head();
    if (head === null && this.bus.bridge && !this.fullRun) {
      // Redis lost the feed (restarted without persistence, flushed). A full publication takes seconds to
      // tens of seconds at a million keys, and the replicas still hold the policy of the lost feed: the changes
      // after its cursor go to a bridge epoch at once, and the full publication is written beside it. The
      // cursor is the one recorded in Postgres (this control plane may have restarted too), or the one it saw
      // if newer; none, or only one ahead of this database (a restore): publish in full (feed-position.ts).
      const base = await bridgeBase(this.db, this.bus.feed ?? null, this.lastCursor);
      if (base !== null) {
        head = await this.bus.bridge(base.cursor, startedAt);
        if (head === null) return void (this.dirty = true); // another control plane published meanwhile
        this.bridges++;
        this.opts.onBridge?.(head, base);
      }
    }
    if (head === null || (!this.checkedCursor && (await cursorFromElsewhere(this.db, head.cursor)))) {
      // Nothing to append changes to (or only another database's): they wait for the full publication (this
      // control plane's, or the one another is running: its rounds append what committed after its snapshot).
      if (this.fullRun) await this.fullRun;
      else await this.full(head?.epoch ?? null);
      return;
    }
    this.checkedCursor = true;
    this.lastCursor = head.cursor;
    this.seenEpoch = head.epoch;
    // A bridge is current: its full publication runs beside it, here too if the control plane that started it
    // is gone (else replicas that hold nothing would wait for one forever). A full publication wanted for an
    // epoch that is no longer current was done meanwhile, by this control plane or another.
    if (head.bridge) this.wanted = { epoch: head.epoch };
    else if (this.wanted) {
      this.wanted.epoch ??= head.epoch;
      if (this.wanted.epoch !== head.epoch) this.wanted = null;
    }
    this.startFull();
    const page = this.opts.maxChanges ?? 1_000;
    let from = head;
    const cost = { readMs: 0, prepareMs: 0, appendMs: 0, changes: 0 };
    let t = performance.now();
    const lap = (step: "readMs" | "prepareMs" | "appendMs") => {
      const now = performance.now();
      cost[step] += now - t;
      t = now;
    };
    // Each append from the head the previous one left (no other control plane's lands in between); the cursor
    // moves only with the last page of the changes.
    const append = async (changes: PolicyChange[], cursor: string | null): Promise<boolean> => {
      lap("prepareMs");
      const version = changes.reduce((m, c) => Math.max(m, c.v), 0);
      const next = await this.bus.append(from, changes, cursor ?? from.cursor, version, startedAt);
      lap("appendMs");
      cost.changes += changes.length;
      if (next === null) return false;
      from = next;
      this.lastCursor = next.cursor;
      return true;
    };
    const prepared = async (read: ChangePage): Promise<PolicyChange[]> => {
      lap("readMs");
      const { changes } = await this.prepare(read.changes);
      if (read.catalogVersion >= 0) changes.push(await this.catalog(read.catalogVersion));
      return changes;
    };
    // Budgeted entities of the time zones whose calendar day turned over since the last round: their periods
    // (and so their period spend) changed though no row did.
    const now = this.calendar.now();
    const commits = this.commits;
    for (const zone of await this.turnedOver(now)) {
      const ok = await readBudgeted(this.db, zone, page, async (changes) => {
        lap("readMs");
        return append((await this.prepare(changes)).changes, null);
      });
      // Someone else moved the head: read again from where it is now (the day turned over still).
      if (!ok) return void (this.dirty = true);
    }
    // A read of many pages (a bulk change) takes a while to append: what changes meanwhile (a revocation) is
    // read between its pages, from the bulk's snapshot on (a side read), and appended at once. The bulk's later
    // pages then leave out an entity a side read published (its version is newer), so an entity's versions
    // only grow along the stream, and the cursor moves past both with the last page. Not on PGlite (one
    // connection: a second transaction would wait for the first).
    const side = new Map<string, number>();
    let sideCursor: string | null = null;
    const sideRead = async (snapshot: string): Promise<boolean> => {
      if (!this.dirty || this.db.kind !== "postgres") return true;
      this.dirty = false;
      let reached: string | null = null;
      const ok = await readChanges(this.db, sideCursor ?? snapshot, page, async (read) => {
        const changes = await prepared(read);
        for (const c of changes) side.set(`${c.kind}:${c.id}`, c.v);
        if (read.last) reached = read.snapshot;
        return append(changes, null);
      });
      if (ok) sideCursor = reached;
      return ok;
    };
    let pages = 0;
    const ok = await readChanges(this.db, head.cursor, page, async (read) => {
      let changes = await prepared(read);
      if (pages++ > 0) {
        if (!(await sideRead(read.snapshot))) return false;
        if (side.size > 0) changes = changes.filter((c) => (side.get(`${c.kind}:${c.id}`) ?? -1) < c.v);
      }
      return append(changes, read.last ? (sideCursor ?? read.snapshot) : null);
    });
    // Someone else moved the head: read again from where it is now.
    if (!ok) this.dirty = true;
    else if (commits === this.commits) this.lastRoundAt = now;
    // Where the feed stands now, recorded after the append that put it there (never ahead of the feed).
    if (from.cursor !== head.cursor) await this.record(from);
    this.opts.onRound?.(cost);
    // The head as this round left it (its own deletions counted, and any another control plane appended).
    if (ok) this.compact(from);
  }

  /**
   * Starts the full publication wanted beside the rounds, unless one is running here. If another control plane
   * is running one, it stays wanted and the next round looks again: by then that one is current (and satisfies
   * it), or still running, or gone with its holder (whose lease expires, and this one takes over).
   */
  private startFull(): void {
    if (!this.wanted || this.fullRun) return;
    let skipped = false;
    this.fullRun = this.full(this.wanted.epoch ?? null)
      .then(
        (published) => void (skipped = !published),
        (err: unknown) => this.onError(err),
      )
      .finally(() => {
        this.fullRun = null;
        // changes committed after the new epoch's snapshot were appended to the old one only: append them again
        if (!skipped) this.changed();
      });
  }

  /**
   * Tombstones are dropped only by a new epoch (a full load leaves them out): once the head counts more than the
   * threshold (compactionThreshold), a full publication is written beside the current epoch, as `republish`
   * does. One at a time (fullRun), and not again for this epoch: the new one starts with none.
   */
  private compact(head: FeedHead): void {
    if (this.fullRun || this.wanted || head.bridge || head.tombstones === undefined) return;
    const threshold = compactionThreshold(
      head.entities ?? 0,
      this.opts.compactTombstones ?? COMPACT_TOMBSTONES,
      this.opts.compactShare,
    );
    if (threshold === null || head.tombstones <= threshold) return;
    this.opts.onCompact?.(head, threshold);
    this.compactions++;
    this.wanted = { epoch: head.epoch };
    this.startFull();
  }

  /** Time zones of budgeted entities whose calendar day turned over since the last complete round. */
  private async turnedOver(now: number): Promise<string[]> {
    const since = this.lastRoundAt;
    if (this.zones === null) {
      const rows = await this.db.sql.transaction((tx) =>
        tx.query<{ tz: string }>(`SELECT DISTINCT time_zone AS tz FROM accounts`),
      );
      this.zones = new Set(rows.map((r) => r.tz));
      return [];
    }
    if (since === 0) return [];
    return [...this.zones].filter((zone) => this.calendar.bounds(zone, "day", now).start > since);
  }

  private async prepare(changes: ReadChange[]): Promise<{ changes: PolicyChange[] }> {
    const done = await withBudgets(this.db.prisma, this.calendar, changes);
    for (const z of done.zones) this.zones?.add(z);
    return done;
  }

  /** A full publication to replace the epoch `current` (null: none); false when another control plane runs one. */
  private async full(current: string | null): Promise<boolean> {
    const writer = await this.bus.beginFull(current);
    if (writer === null) {
      this.fullSkipped++;
      return false;
    }
    try {
      await this.fullWith(writer);
    } finally {
      await writer.close();
    }
    return true;
  }

  private async fullWith(writer: FullWriter): Promise<void> {
    this.wanted = null;
    const startedAt = this.calendar.now();
    let entities = 0;
    const read = await readAll(this.db, this.opts.pageSize ?? 5_000, async (page) => {
      await this.opts.beforeFullPage?.();
      entities += page.length;
      await writer.put((await this.prepare(page)).changes);
    });
    await writer.put([await this.catalog(read.catalogVersion)]);
    await writer.commit(read.cursor, read.version, entities);
    await this.record({ epoch: writer.epoch, cursor: read.cursor, seq: 0 });
    this.lastCursor = read.cursor;
    this.seenEpoch = writer.epoch;
    // Budget periods are as of the full read: a day turning over after it is the rounds' to publish.
    // (and a round that read before this commit does not move that mark past it).
    this.lastRoundAt = startedAt;
    this.commits++;
    this.checkedCursor = true;
    this.fullPublications++;
  }

  /**
   * Records in Postgres where the feed stands (feed-position.ts): one small upsert. A failure is reported, not
   * thrown: the feed itself moved, and a record that lags only makes a later bridge start further back.
   */
  private async record(head: FeedHead): Promise<void> {
    if (this.bus.feed === undefined) return;
    await recordFeedPosition(this.db, this.bus.feed, head).catch((err: unknown) => this.onError(err));
  }

  private async catalog(v: number): Promise<PolicyChange> {
    return { kind: "catalog", id: "", v, json: entityJson(v, { models: await buildCatalog(this.db.prisma) }) };
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
  }
}
