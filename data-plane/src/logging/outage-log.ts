import type { Logger } from "pino";

// While a dependency (Redis) is down, every request and every reconnect attempt fails the same way: logged
// line by line, that was about five warnings per request and an error a second per replica. Instead the
// change of state is logged once ("redis unavailable", with the first error), then one summary line per
// interval while it lasts (how many failures of each kind, and since when), and the recovery once, with the
// totals.

//
// The outage ends on the dependency's actual health, not on one event: `recovered` (a connection's "ready") is
// taken only when `healthy` says every connection to it is ready, and only once no failure has come for
// `settleMs`; a failure meanwhile keeps the outage open (one connection ready while another still reconnects
// logged "available again" and, 4 ms later, "unavailable" again). And the summary timer checks the same
// condition, so an outage whose failures stopped ends even if no "ready" ever follows (a stray failure
// reported while Redis was up left "still unavailable" lines for ten minutes).

interface Down {
  since: number;
  /** failures per kind since the last summary */
  recent: Map<string, number>;
  /** failures per kind since the outage began */
  total: Map<string, number>;
  /** when the last failure came */
  lastFailure: number;
  timer: NodeJS.Timeout;
  /** a recovery waiting for the quiet period to pass */
  settling: NodeJS.Timeout | null;
}

export interface OutageLogOptions {
  /**
   * whether the dependency is healthy now (every connection ready). Without it `recovered` is taken at its word
   * and the summary timer never ends an outage by itself.
   */
  healthy?: (dependency: string) => boolean;
  /** the outage ends only after this long without a failure; default 1 s */
  settleMs?: number;
}

export class OutageLog {
  private readonly down = new Map<string, Down>();
  private readonly healthy: ((dependency: string) => boolean) | undefined;
  private readonly settleMs: number;

  constructor(
    private readonly logger: Logger,
    /** MODELGATE_LOG_SUMMARY_MS: one summary line per this while a dependency stays down; default 30 s */
    private readonly summaryEveryMs = 30_000,
    private readonly clock: () => number = Date.now,
    options: OutageLogOptions = {},
  ) {
    this.healthy = options.healthy;
    this.settleMs = options.settleMs ?? 1_000;
  }

  /** One failure of `dependency`, of a kind (what failed: "connection", "usage write", ...). Never throws. */
  failure(dependency: string, kind: string, err: unknown): void {
    let d = this.down.get(dependency);
    if (d === undefined) {
      const timer = setInterval(() => this.summarise(dependency), this.summaryEveryMs);
      timer.unref();
      d = { since: this.clock(), recent: new Map(), total: new Map(), lastFailure: 0, timer, settling: null };
      this.down.set(dependency, d);
      this.logger.warn(
        { dependency, kind, err: (err as Error)?.message ?? String(err) },
        `${dependency} unavailable; failures are summarised every ${Math.round(this.summaryEveryMs / 1000)} s until it is back`,
      );
    }
    d.lastFailure = this.clock();
    d.recent.set(kind, (d.recent.get(kind) ?? 0) + 1);
    d.total.set(kind, (d.total.get(kind) ?? 0) + 1);
  }

  /**
   * The dependency answers again (a connection is ready): the recovery is logged once, with what the outage
   * cost, when it is healthy and has been quiet for settleMs (at once if it has; else once the quiet period
   * has passed, if no failure came meanwhile).
   */
  recovered(dependency: string): void {
    const d = this.down.get(dependency);
    if (d === undefined || (this.healthy !== undefined && !this.healthy(dependency))) return;
    const wait = d.lastFailure + this.settleMs - this.clock();
    if (wait <= 0) return this.end(dependency, d);
    if (d.settling !== null) clearTimeout(d.settling);
    d.settling = setTimeout(() => {
      d.settling = null;
      this.recovered(dependency);
    }, wait);
    d.settling.unref();
  }

  private end(dependency: string, d: Down): void {
    clearInterval(d.timer);
    if (d.settling !== null) clearTimeout(d.settling);
    this.down.delete(dependency);
    this.logger.info(
      { dependency, downForMs: this.clock() - d.since, failures: Object.fromEntries(d.total) },
      `${dependency} available again`,
    );
  }

  isDown(dependency: string): boolean {
    return this.down.has(dependency);
  }

  private summarise(dependency: string): void {
    const d = this.down.get(dependency);
    if (d === undefined) return;
    // Healthy and quiet: over, whether or not a "ready" told us (the state follows health; it cannot stick).
    if (this.healthy?.(dependency) && this.clock() - d.lastFailure >= this.settleMs) return this.end(dependency, d);
    if (d.recent.size === 0) return;
    this.logger.warn(
      { dependency, downForMs: this.clock() - d.since, failures: Object.fromEntries(d.recent) },
      `${dependency} still unavailable`,
    );
    d.recent.clear();
  }

  /** Stops the summary timers (shutdown). */
  close(): void {
    for (const d of this.down.values()) {
      clearInterval(d.timer);
      if (d.settling !== null) clearTimeout(d.settling);
    }
  }
}
