/** What LoopWatch switches on and off: perf_hooks' IntervalHistogram (monitorEventLoopDelay). */
export interface Switchable {
  enable(): boolean;
  disable(): boolean;
}

/**
 * Samples the event-loop delay only while calls are served: from a call's start until `idleMs` after the last
 * call in flight ended. The delay metric exists to show what a blocked loop costs the calls waiting behind it;
 * with no call there is no one to delay, and the sampling timer (100 wake-ups a second at the metric's 10 ms
 * resolution) was then about 4 of an idle replica's 10–14 ms of CPU a second (bench's idle scenario, alternated
 * with and without it: 10.2–14.2 against 6.8–7.2 ms/s). Under any steady traffic it stays on. Probes and
 * scrapes are not calls: a load balancer's health checks do not keep it on.
 */
export class LoopWatch {
  private inFlight = 0;
  private lastEndAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly ended = (): void => {
    this.inFlight--;
    this.lastEndAt = this.clock();
  };
  private readonly check = (): void => {
    if (this.inFlight > 0 || this.clock() - this.lastEndAt < this.idleMs) return;
    this.stop();
  };

  constructor(
    private readonly histogram: Switchable,
    private readonly idleMs = 2_000,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether the delay is being sampled now. */
  get sampling(): boolean {
    return this.timer !== null;
  }

  /** A call started; it ends when its response closes (finished or cut). */
  call(res: { once(event: "close", listener: () => void): unknown }): void {
    this.inFlight++;
    res.once("close", this.ended);
    if (this.timer !== null) return;
    this.histogram.enable();
    // looks every idleMs whether the calls stopped: one wake-up per idleMs while on, none while off
    this.timer = setInterval(this.check, this.idleMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    this.histogram.disable();
  }
}
