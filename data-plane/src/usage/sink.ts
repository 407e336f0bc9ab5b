import type { Redis } from "ioredis";
import type { UsageEvent } from "../contract/index.ts";

/** Where finished calls go to be settled. emit never throws and never blocks the response. */
export interface UsageSink {
  emit(event: UsageEvent): void;
  /** Resolves once everything emitted so far has been handed over (used on shutdown). */
  flush(): Promise<void>;
}

/** Embedded mode: the control plane lives in the same process and settles events from a queue. */
export class InProcessUsageSink implements UsageSink {
  private pending = Promise.resolve();
  constructor(private readonly settle: (event: UsageEvent) => Promise<void>, private readonly onError: (err: unknown, e: UsageEvent) => void) {}
  emit(event: UsageEvent): void {
    // Chained so events settle in order and a burst never opens more than one transaction at a time.
    this.pending = this.pending.then(() => this.settle(event)).catch((err) => this.onError(err, event));
  }
  flush(): Promise<void> {
    return this.pending;
  }
}

/** Distributed mode: a Redis Stream read by the control plane's consumer group. */
export class RedisUsageSink implements UsageSink {
  private inflight = new Set<Promise<unknown>>();
  constructor(private readonly redis: Redis, private readonly stream: string, private readonly onError: (err: unknown, e: UsageEvent) => void) {}
  emit(event: UsageEvent): void {
    const p = this.redis
      .xadd(this.stream, "*", "event", JSON.stringify(event))
      .catch((err) => this.onError(err, event))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }
  async flush(): Promise<void> {
    await Promise.all([...this.inflight]);
  }
}
