// Retries as a share of the traffic: over a sliding window, retries may be at most `ratio` of the calls plus
// a small floor (so a quiet gateway can still retry). During an outage every first try fails, and without a
// budget each one would become maxAttempts calls on a provider that is already struggling.

const BUCKETS = 10;

export interface RetryBudgetOptions {
  /** retries allowed per call in the window; default 0.2 */
  ratio?: number;
  /** retries always allowed in the window; default 10 */
  minRetries?: number;
  /** default 10 s */
  windowMs?: number;
}

export class RetryBudget {
  private readonly ratio: number;
  private readonly minRetries: number;
  private readonly bucketMs: number;
  private readonly calls = new Float64Array(BUCKETS);
  private readonly retries = new Float64Array(BUCKETS);
  private readonly slots = new Float64Array(BUCKETS).fill(-1);

  constructor(o: RetryBudgetOptions = {}) {
    this.ratio = o.ratio ?? 0.2;
    this.minRetries = o.minRetries ?? 10;
    this.bucketMs = (o.windowMs ?? 10_000) / BUCKETS;
  }

  /** A first try of a call. */
  call(now: number): void {
    this.calls[this.bucket(now)]!++;
  }

  /** Whether one more retry fits the budget; if so it is counted. */
  tryRetry(now: number): boolean {
    const i = this.bucket(now);
    const oldest = Math.floor(now / this.bucketMs) - BUCKETS + 1;
    let calls = 0;
    let retries = 0;
    for (let j = 0; j < BUCKETS; j++) {
      if (this.slots[j]! >= oldest) {
        calls += this.calls[j]!;
        retries += this.retries[j]!;
      }
    }
    if (retries >= this.minRetries + this.ratio * calls) return false;
    this.retries[i]!++;
    return true;
  }

  private bucket(now: number): number {
    const slot = Math.floor(now / this.bucketMs);
    const i = slot % BUCKETS;
    if (this.slots[i] !== slot) {
      this.slots[i] = slot;
      this.calls[i] = 0;
      this.retries[i] = 0;
    }
    return i;
  }
}
