import type { Redis } from "ioredis";
import { type RedisNames, usageEventSchema } from "@modelgate/data-plane/contract/index";

export const USAGE_GROUP = "modelgate-settlers";

type Entry = [id: string, fields: string[]];

/**
 * Reads the usage stream as a member of a consumer group and acknowledges an entry only after it settled.
 * Entries left pending by a consumer that died are claimed after `claimIdleMs`, so every event settles
 * (settlement is idempotent, so a claim that races a slow consumer is harmless).
 */
export class RedisUsageConsumer {
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly names: RedisNames,
    private readonly consumer: string,
    private readonly settle: (e: ReturnType<typeof usageEventSchema.parse>) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    private readonly claimIdleMs = 30_000,
  ) {}

  async start(): Promise<void> {
    try {
      await this.redis.xgroup("CREATE", this.names.usageStream, USAGE_GROUP, "0", "MKSTREAM");
    } catch (err) {
      if (!String(err).includes("BUSYGROUP")) throw err;
    }
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let lastClaim = 0;
    while (!this.stopped) {
      try {
        if (Date.now() - lastClaim > Math.min(this.claimIdleMs, 5_000)) {
          lastClaim = Date.now();
          const claimed = (await this.redis.xautoclaim(this.names.usageStream, USAGE_GROUP, this.consumer, this.claimIdleMs, "0-0", "COUNT", 100)) as [string, Entry[]];
          await this.handle(claimed[1] ?? []);
        }
        // Our own pending entries first (left over from a failed settle), then new ones.
        const own = (await this.redis.xreadgroup("GROUP", USAGE_GROUP, this.consumer, "COUNT", 100, "STREAMS", this.names.usageStream, "0")) as [string, Entry[]][] | null;
        if (own?.[0]?.[1].length) {
          await this.handle(own[0][1]);
          continue;
        }
        const fresh = (await this.redis.xreadgroup("GROUP", USAGE_GROUP, this.consumer, "COUNT", 100, "BLOCK", 1000, "STREAMS", this.names.usageStream, ">")) as [string, Entry[]][] | null;
        if (fresh?.[0]) await this.handle(fresh[0][1]);
      } catch (err) {
        if (this.stopped) break;
        this.onError(err);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private async handle(entries: Entry[]): Promise<void> {
    for (const [id, fields] of entries) {
      if (!fields) {
        await this.redis.xack(this.names.usageStream, USAGE_GROUP, id); // deleted entry
        continue;
      }
      const raw = fields[fields.indexOf("event") + 1];
      const parsed = usageEventSchema.safeParse(raw ? JSON.parse(raw) : null);
      if (!parsed.success) {
        this.onError(new Error(`dropping malformed usage entry ${id}`));
        await this.redis.xack(this.names.usageStream, USAGE_GROUP, id);
        continue;
      }
      await this.settle(parsed.data);
      await this.redis.multi().xack(this.names.usageStream, USAGE_GROUP, id).xdel(this.names.usageStream, id).exec();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
