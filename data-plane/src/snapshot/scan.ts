import type { Redis } from "ioredis";
import type { ShardKind } from "./table.ts";

// A full load's reading of the feed's shard hashes, shared by the two places a load can run: the main thread
// (RedisPolicySource with loadIn "thread") and the load worker (load-worker.ts, the default), so pacing,
// parallelism and cancellation are the same code in both.

/** One shard hash to read: which kind and shard it holds, and its Redis key. */
export interface ShardToRead {
  kind: ShardKind;
  shard: number;
  key: string;
}

export interface ScanOptions {
  /** entries asked for per HSCAN (a hint to Redis) */
  scanCount: number;
  /** shards in flight at once when not paced */
  parallel: number;
  /**
   * 0: flat out. Otherwise one piece in flight, then a pause of `pace` times as long as that piece took (read,
   * Redis's reply, putting it), so the load takes at most about 1/(1 + pace) of the replica's and Redis's time.
   */
  pace: number;
  /** checked after every await: true stops the reading (what was put stays put) */
  cancelled(): boolean;
  /**
   * Whether the epoch read is still the current one (the head names it): asked when a shard's scan ends with an
   * empty piece, which is also what HSCAN answers for a hash that is gone. If Redis lost its data mid-load
   * (restarted without persistence) or a newer epoch replaced this one (the old expires), every shard read from
   * then on would look empty, and swapping those in would make the replica forget its keys until the next
   * load; so the reading stops there instead, as when cancelled (the shards swapped in before stay: they were
   * read whole).
   */
  current(): Promise<boolean>;
}

/**
 * Reads every shard a bounded piece at a time (HSCAN, as bytes), handing each entry to `put` and each shard's
 * end to `done`. Every command names one key (on a Redis Cluster each shard is read from the master holding its
 * slot). Stops quietly when cancelled, or when the epoch is no longer current ("gone", see ScanOptions.current);
 * a Redis error rejects.
 */
export async function scanShards(
  redis: Redis,
  shards: readonly ShardToRead[],
  opts: ScanOptions,
  put: (kind: ShardKind, id: Uint8Array, json: Uint8Array) => void,
  done: (kind: ShardKind, shard: number) => void,
): Promise<"read" | "gone"> {
  let next = 0;
  let gone = false;
  const reader = async () => {
    while (next < shards.length && !opts.cancelled() && !gone) {
      const { kind, shard, key } = shards[next++]!;
      let cursor = "0";
      do {
        const started = performance.now();
        const [c, flat] = await redis.hscanBuffer(key, cursor, "COUNT", opts.scanCount);
        if (opts.cancelled() || gone) return;
        cursor = c.toString();
        if (flat.length === 0 && cursor === "0" && !(await opts.current())) {
          gone = true;
          return;
        }
        for (let i = 0; i + 1 < flat.length; i += 2) put(kind, flat[i]!, flat[i + 1]!);
        if (opts.pace > 0) await pause((performance.now() - started) * opts.pace);
        if (opts.cancelled()) return;
      } while (cursor !== "0");
      done(kind, shard);
    }
  };
  await Promise.all(Array.from({ length: opts.pace > 0 ? 1 : opts.parallel }, reader));
  return gone ? "gone" : "read";
}

/**
 * Waits at least `ms` of real time. A timer alone may fire early: libuv measures its start from the loop's
 * cached clock (stale by however long the current turn has run) in whole milliseconds.
 */
export async function pause(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now())
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(left))));
}
