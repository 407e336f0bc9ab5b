import type { Snapshot } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import { buildSnapshot } from "./build.ts";

/** Where a built snapshot goes: straight into the data plane's store (embedded) or to Redis (distributed). */
export interface SnapshotBus {
  publish(snapshot: Snapshot): Promise<void>;
  /**
   * A version higher than any handed out before, taken before the database is read: whichever build took
   * the highest version also read last, so replicas that only accept newer versions never go backwards.
   */
  nextVersion(): Promise<number>;
}

/**
 * Coalesces change notifications: however many writes happen in a burst, one snapshot is built per
 * `debounceMs`, and never two at once. `flush()` resolves once every change requested so far is published.
 */
export class SnapshotPublisher {
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly prisma: Db,
    private readonly bus: SnapshotBus,
    private readonly debounceMs = 25,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    await this.publishNow();
  }

  private settleTimer: NodeJS.Timeout | null = null;

  /**
   * Usage was settled: balances and spend moved. The data planes' spend counters already cover unsettled
   * spend, so this may wait (settledEveryMs); under load it costs one rebuild a second, not one per batch.
   */
  settled = (settledEveryMs = 1_000): void => {
    this.settleTimer ??= setTimeout(() => {
      this.settleTimer = null;
      this.changed();
    }, settledEveryMs);
  };

  changed = (): void => {
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.run();
    }, this.debounceMs);
  };

  flush(): Promise<void> {
    if (!this.dirty && !this.running && !this.timer) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        void this.run();
      }
    });
  }

  private async run(): Promise<void> {
    if (this.running) {
      await this.running;
      if (this.dirty && !this.timer) return this.run();
      return;
    }
    this.running = (async () => {
      while (this.dirty) {
        this.dirty = false;
        try {
          await this.publishNow();
        } catch (err) {
          this.onError(err);
        }
      }
    })();
    await this.running;
    this.running = null;
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }

  private async publishNow(): Promise<void> {
    const version = await this.bus.nextVersion();
    await this.bus.publish(await buildSnapshot(this.prisma, version));
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
  }
}
