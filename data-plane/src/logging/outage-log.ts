import type { Logger } from "pino";

// While a dependency (Redis) is down, every request and every reconnect attempt fails the same way: logged
// line by line, that was about five warnings per request and an error a second per replica. Instead the
// change of state is logged once ("redis unavailable", with the first error), then one summary line per
// interval while it lasts (how many failures of each kind, and since when), and the recovery once, with the
// totals.

interface Down {
  since: number;
  /** failures per kind since the last summary */
  recent: Map<string, number>;
  /** failures per kind since the outage began */
  total: Map<string, number>;
  timer: NodeJS.Timeout;
}

export class OutageLog {
  private readonly down = new Map<string, Down>();

  constructor(
    private readonly logger: Logger,
    /** MODELGATE_LOG_SUMMARY_MS: one summary line per this while a dependency stays down; default 30 s */
    private readonly summaryEveryMs = 30_000,
    private readonly clock: () => number = Date.now,
  ) {}

  /** One failure of `dependency`, of a kind (what failed: "connection", "usage write", ...). Never throws. */
  failure(dependency: string, kind: string, err: unknown): void {
    let d = this.down.get(dependency);
    if (d === undefined) {
      const timer = setInterval(() => this.summarise(dependency), this.summaryEveryMs);
      timer.unref();
      d = { since: this.clock(), recent: new Map(), total: new Map(), timer };
      this.down.set(dependency, d);
      this.logger.warn(
        { dependency, kind, err: (err as Error)?.message ?? String(err) },
        `${dependency} unavailable; failures are summarised every ${Math.round(this.summaryEveryMs / 1000)} s until it is back`,
      );
    }
    d.recent.set(kind, (d.recent.get(kind) ?? 0) + 1);
    d.total.set(kind, (d.total.get(kind) ?? 0) + 1);
  }

  /** The dependency answers again: the recovery is logged once, with what the outage cost. */
  recovered(dependency: string): void {
    const d = this.down.get(dependency);
    if (d === undefined) return;
    clearInterval(d.timer);
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
    if (d === undefined || d.recent.size === 0) return;
    this.logger.warn(
      { dependency, downForMs: this.clock() - d.since, failures: Object.fromEntries(d.recent) },
      `${dependency} still unavailable`,
    );
    d.recent.clear();
  }

  /** Stops the summary timers (shutdown). */
  close(): void {
    for (const d of this.down.values()) clearInterval(d.timer);
  }
}
