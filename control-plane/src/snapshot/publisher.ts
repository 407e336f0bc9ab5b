import { type BudgetCalendar, entityJson, type PolicyChange } from "@modelgate/data-plane";
import { controlCalendar } from "../budgets/calendar.ts";
import type { Database } from "../db/client.ts";
import { buildCatalog } from "./catalog.ts";
import { withBudgets } from "./feed-budgets.ts";
import { cursorFromElsewhere, readAll, readBudgeted, readChanges, type ReadChange } from "./feed-sql.ts";

/** Where the published feed stands: its epoch (one full publication and the changes after it) and cursor. */
export interface FeedHead {
  epoch: string;
  /** the Postgres position (a pg_snapshot's text) the published changes reach */
  cursor: string;
}

/** A full publication in progress: pages of entities, then the switch to it. */
export interface FullWriter {
  put(changes: PolicyChange[]): Promise<void>;
  commit(cursor: string, version: number): Promise<void>;
}

/** Where policy goes: straight into the data plane's store (embedded) or to Redis (distributed). */
export interface PolicyBus {
  /** the published feed's head, or null when nothing is published (Redis is new or lost its data) */
  head(): Promise<FeedHead | null>;
  /** starts a full publication: it becomes current only at commit, so readers keep the old one until then */
  beginFull(): Promise<FullWriter>;
  /**
   * Appends changes after `from` and moves the cursor, only if the head is still `from` (false: another control
   * plane published meanwhile, read again). With no changes it only says the feed is current.
   */
  append(from: FeedHead, changes: PolicyChange[], cursor: string, version: number, at?: number): Promise<boolean>;
}

/**
 * Publishes policy as changes. Each round reads only what changed since the published cursor (the policy_changes
 * table, kept by triggers) and appends it: a revoked key costs one small read and one Redis script, whatever the
 * key count. A full publication (streamed a page at a time) happens only when nothing is published yet, the
 * published cursor belongs to another database, or more changed at once than `maxChanges`.
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
  /** full publications so far (for tests and the benchmark) */
  fullPublications = 0;

  constructor(
    private readonly db: Database,
    private readonly bus: PolicyBus,
    private readonly debounceMs = 25,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly opts: {
      maxChanges?: number;
      pageSize?: number;
      calendar?: BudgetCalendar;
      /** every round's cost (ms per step) and size, for a log line when it was slow */
      onRound?: (r: { readMs: number; prepareMs: number; appendMs: number; changes: number }) => void;
    } = {},
  ) {}

  private get calendar(): BudgetCalendar {
    return this.opts.calendar ?? controlCalendar;
  }

  async start(): Promise<void> {
    await this.round();
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

  flush(): Promise<void> {
    if (!this.dirty && !this.running && !this.timer) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        void this.run();
      }
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
    const head = await this.bus.head();
    if (head === null || (!this.checkedCursor && (await cursorFromElsewhere(this.db, head.cursor)))) return this.full();
    this.checkedCursor = true;
    const max = this.opts.maxChanges ?? 20_000;
    const t0 = performance.now();
    const read = await readChanges(this.db, head.cursor, max);
    if (read.overflow) return this.full();
    const rolled = await this.rolledOver(max);
    if (rolled === null) return this.full();
    const t1 = performance.now();
    const { changes } = await this.prepare([...read.changes, ...rolled]);
    if (read.catalogVersion >= 0) changes.push(await this.catalog(read.catalogVersion));
    const version = changes.reduce((m, c) => Math.max(m, c.v), 0);
    const t2 = performance.now();
    // Someone else moved the head: read again from where it is now.
    if (!(await this.bus.append(head, changes, read.cursor, version, startedAt))) this.dirty = true;
    this.opts.onRound?.({
      readMs: t1 - t0,
      prepareMs: t2 - t1,
      appendMs: performance.now() - t2,
      changes: changes.length,
    });
  }

  /**
   * Budgeted entities of the time zones whose calendar day turned over since the last round: their periods
   * (and so their period spend) changed though no row did. Null: too many, publish in full.
   */
  private async rolledOver(max: number): Promise<ReadChange[] | null> {
    const now = this.calendar.now();
    const since = this.lastRoundAt;
    this.lastRoundAt = now;
    if (this.zones === null) {
      const rows = await this.db.sql.transaction((tx) =>
        tx.query<{ tz: string }>(`SELECT DISTINCT time_zone AS tz FROM accounts`),
      );
      this.zones = new Set(rows.map((r) => r.tz));
      return [];
    }
    const out: ReadChange[] = [];
    for (const zone of this.zones) {
      if (since === 0 || this.calendar.bounds(zone, "day", now).start <= since) continue;
      const r = await readBudgeted(this.db, zone, max);
      if (r.overflow) return null;
      out.push(...r.changes);
    }
    return out;
  }

  private async prepare(changes: ReadChange[]): Promise<{ changes: PolicyChange[] }> {
    const done = await withBudgets(this.db.prisma, this.calendar, changes);
    for (const z of done.zones) this.zones?.add(z);
    return done;
  }

  private async full(): Promise<void> {
    const writer = await this.bus.beginFull();
    this.lastRoundAt = this.calendar.now();
    const read = await readAll(this.db, this.opts.pageSize ?? 5_000, async (page) =>
      writer.put((await this.prepare(page)).changes),
    );
    await writer.put([await this.catalog(read.catalogVersion)]);
    await writer.commit(read.cursor, read.version);
    this.checkedCursor = true;
    this.fullPublications++;
  }

  private async catalog(v: number): Promise<PolicyChange> {
    return { kind: "catalog", id: "", v, json: entityJson(v, { models: await buildCatalog(this.db.prisma) }) };
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
  }
}
