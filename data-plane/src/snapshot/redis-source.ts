import type { Redis } from "ioredis";
import { type RedisNames, snapshotSchema } from "../contract/index.ts";
import type { SnapshotStore } from "./store.ts";

/**
 * Keeps a SnapshotStore in step with Redis: the control plane writes the full snapshot under one key and
 * publishes its version; a replica that hears a newer version (or finds one on its periodic check, in case a
 * message was missed during a disconnect) reloads it. While Redis is down the store keeps its last snapshot.
 */
export class RedisSnapshotSource {
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly store: SnapshotStore,
    private readonly names: RedisNames,
    private readonly pollMs = 2_000,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (_channel: string, message: string) => {
      if (Number(message) > this.store.version || !this.store.loaded) void this.reload();
    });
    await this.subscriber.subscribe(this.names.snapshotChannel);
    await this.reload();
    this.timer = setInterval(() => void this.reload(), this.pollMs);
    this.timer.unref();
  }

  reload(): Promise<void> {
    // One load at a time, but never one that hangs: a reload that has not finished in 3 s is abandoned so
    // the next notification or poll can try again.
    this.loading ??= Promise.race([this.load(), new Promise<void>((resolve) => setTimeout(resolve, 3_000).unref())]).finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    try {
      // The version alone first (and the control plane's heartbeat, in the same round trip): polling stays
      // cheap however large the snapshot is.
      const [published, heartbeat] = await this.redis.mget(this.names.snapshotVersion, this.names.controlHeartbeat);
      const beat = heartbeat ? Number((JSON.parse(heartbeat) as { at?: unknown }).at) : NaN;
      this.store.heardControlPlane(Number.isFinite(beat) ? beat : null);
      if (published !== null && this.store.loaded && Number(published) === this.store.version) {
        this.store.touch();
        return;
      }
      const raw = await this.redis.get(this.names.snapshot);
      if (raw === null) return;
      const version = Number(/"version":(\d+)/.exec(raw)?.[1] ?? -1);
      if (this.store.loaded && version === this.store.version) {
        this.store.touch();
        return;
      }
      this.store.apply(snapshotSchema.parse(JSON.parse(raw)));
    } catch (err) {
      this.onError(err);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.subscriber.unsubscribe(this.names.snapshotChannel).catch(() => undefined);
  }
}
