import type { Redis } from "ioredis";
import type { UsageEvent } from "../contract/index.ts";
import type { UsageSpool } from "./spool.ts";

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

/**
 * Distributed mode: a Redis Stream read by the control plane's consumer group. While Redis cannot take an
 * event, it goes to the local disk spool instead, and a replay loop moves the backlog to Redis once it is
 * back (the control plane settles by request id, so a replayed duplicate is harmless). Nothing is dropped.
 */
export class RedisUsageSink implements UsageSink {
  private inflight = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly stream: string,
    private readonly spool: UsageSpool,
    private readonly onError: (err: unknown) => void,
    replayEveryMs = 1_000,
  ) {
    this.timer = setInterval(() => void this.replay(), replayEveryMs);
    this.timer.unref();
  }

  emit(event: UsageEvent): void {
    const p = this.redis
      .xadd(this.stream, "*", "event", JSON.stringify(event))
      .catch((err) => {
        this.onError(err);
        this.spool.append(event);
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Moves spooled events to Redis; returns how many went. */
  async replay(): Promise<number> {
    if ((await this.spool.backlogBytes()) === 0) return 0;
    const r = await this.spool.replay(async (batch) => {
      const pipe = this.redis.multi();
      for (const e of batch) pipe.xadd(this.stream, "*", "event", JSON.stringify(e));
      const results = await pipe.exec();
      const failed = results?.find(([err]) => err);
      if (!results || failed) throw failed?.[0] ?? new Error("redis transaction failed");
    });
    return r.sent;
  }

  async flush(): Promise<void> {
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
