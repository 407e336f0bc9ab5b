import type { SnapshotStore } from "@modelgate/data-plane";
import type { FeedHead, FullWriter, PolicyBus } from "./publisher.ts";

/** Embedded mode: the feed goes straight into the data plane's store in the same process. */
export class InProcessPolicyBus implements PolicyBus {
  private current: FeedHead | null = null;
  private epochs = 0;
  constructor(private readonly store: SnapshotStore) {}

  async head(): Promise<FeedHead | null> {
    return this.current;
  }

  /** One control plane in the process: no lease to take, and no other publication to find. */
  async beginFull(): Promise<FullWriter> {
    const load = this.store.beginFullLoad();
    const epoch = `in-process-${++this.epochs}`;
    return {
      epoch,
      close: async () => undefined,
      put: async (changes) => {
        for (const c of changes) load.put(c);
      },
      commit: async (cursor, version) => {
        await load.finish(version, Date.now());
        this.current = { epoch, cursor, seq: 0 };
      },
    };
  }

  async append(
    from: FeedHead,
    changes: Parameters<PolicyBus["append"]>[1],
    cursor: string,
    version: number,
    at = Date.now(),
  ): Promise<FeedHead | null> {
    const c = this.current;
    if (c?.epoch !== from.epoch || c.cursor !== from.cursor || c.seq !== from.seq) return null;
    for (const change of changes) this.store.applyChange(change);
    this.current = { epoch: from.epoch, cursor, seq: from.seq + changes.length };
    this.store.published(version, at);
    return this.current;
  }
}
