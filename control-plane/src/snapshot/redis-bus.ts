import type { Redis } from "ioredis";
import type { RedisNames, Snapshot } from "@modelgate/data-plane";
import type { SnapshotBus } from "./publisher.ts";

/** Writes the full snapshot, then announces its version; replicas that hear it reload. */
export class RedisSnapshotBus implements SnapshotBus {
  constructor(private readonly redis: Redis, private readonly names: RedisNames) {}
  async publish(snapshot: Snapshot): Promise<void> {
    // Compare-and-set in one script: a slower build with a lower version never overwrites a newer one.
    const written = await this.redis.eval(
      `local cur = redis.call('GET', KEYS[1])
       if cur then
         local v = tonumber(string.match(cur, '"version":(%d+)'))
         if v and v >= tonumber(ARGV[2]) then return 0 end
       end
       redis.call('SET', KEYS[1], ARGV[1])
       redis.call('SET', KEYS[3], ARGV[2])
       redis.call('PUBLISH', KEYS[2], ARGV[2])
       return 1`,
      3,
      this.names.snapshot,
      this.names.snapshotChannel,
      this.names.snapshotVersion,
      JSON.stringify(snapshot),
      String(snapshot.version),
    );
    void written;
  }
  /**
   * The shared counter, but never below what this control plane handed out before: if Redis restarted
   * without persistence the counter starts again at 1, and replicas, which hold the last (higher) version,
   * would ignore every snapshot until it caught up. The floor lifts the counter past it in the same script.
   */
  async nextVersion(): Promise<number> {
    const v = Number(
      await this.redis.eval(
        `local v = redis.call('INCR', KEYS[1])
         local floor = tonumber(ARGV[1])
         if v < floor then redis.call('SET', KEYS[1], floor) v = floor end
         return v`,
        1,
        this.names.snapshotSeq,
        String(this.lastVersion + 1),
      ),
    );
    if (v > this.lastVersion) this.lastVersion = v;
    return v;
  }
  private lastVersion = 0;
}
