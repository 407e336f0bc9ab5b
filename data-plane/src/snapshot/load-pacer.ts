// How fast a full load runs while the replica serves: it yields to the requests.
//
// A reload while serving is paced from the start (scan.ts: one piece in flight, then a pause `pace` times as
// long as the piece took), but what the requests can spare depends on everything else on the machine: on two
// cores shared with Redis, the upstreams and other processes, even half a core for the load delayed the
// calls it overlapped by milliseconds. So the main thread watches its own event loop while a load runs (a
// timer every TICK_MS, and how late it fires: the time a request arriving then would have waited for the
// thread) and raises the pace, doubling it, each time a tick is later than `yieldMs`; after CALM_MS without
// one it halves it, down to where it started. The load then takes what the requests leave: on a quiet
// replica it runs as fast as before, on a busy one it slows (changes keep applying meanwhile, and each shard
// still swaps in whole, so a slower load only serves the previous state of a shard a little longer).

/** how often the main thread checks its lateness during a load */
export const TICK_MS = 10;
/** calm this long (no late tick) and the pace halves */
export const CALM_MS = 100;
/** the slowest pace (or the base, if that is slower): the load runs at least 1/(1 + 16) of the time */
export const MAX_PACE = 16;

export class LoadPacer {
  private pace: number;
  private last: number;
  private calmSince: number;

  constructor(
    private readonly base: number,
    private readonly yieldMs: number,
    private readonly onPace: (pace: number) => void,
    now: number,
  ) {
    this.pace = base;
    this.last = now;
    this.calmSince = now;
  }

  get current(): number {
    return this.pace;
  }

  /** One tick of the timer at `now` (it was due TICK_MS after the previous one). */
  tick(now: number): void {
    const late = now - this.last - TICK_MS;
    this.last = now;
    let next = this.pace;
    if (late > this.yieldMs) {
      next = Math.min(Math.max(MAX_PACE, this.base), this.pace * 2);
      this.calmSince = now;
    } else if (now - this.calmSince >= CALM_MS && this.pace > this.base) {
      next = Math.max(this.base, this.pace / 2);
      this.calmSince = now;
    }
    if (next !== this.pace) {
      this.pace = next;
      this.onPace(next);
    }
  }

  /** Runs the ticks on a timer until the returned function is called. */
  static watch(base: number, yieldMs: number, onPace: (pace: number) => void): () => void {
    const pacer = new LoadPacer(base, yieldMs, onPace, performance.now());
    const t = setInterval(() => pacer.tick(performance.now()), TICK_MS);
    t.unref();
    return () => clearInterval(t);
  }
}
