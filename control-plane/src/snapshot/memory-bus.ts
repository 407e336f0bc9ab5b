import type { SnapshotStore } from "@modelgate/data-plane";
import type { FeedHead, FullWriter, PolicyBus } from "./publisher.ts";

/** Embedded mode: the feed goes straight into the data plane's store in the same process. */
export class InProcessPolicyBus implements PolicyBus {
  private current: FeedHead | null = null;
  constructor(private readonly store: SnapshotStore) {}

  async head(): Promise<FeedHead | null> {
    return this.current;
  }

  async beginFull(): Promise<FullWriter> {
    const load = this.store.beginFullLoad();
    return {
      put: async (changes) => {
        for (const c of changes) load.put(c);
      },
      commit: async (cursor, version) => {
        await load.finish(version, Date.now());
        this.current = { epoch: "in-process", cursor };
      },
    };
  }

  async append(
    from: FeedHead,
    changes: Parameters<PolicyBus["append"]>[1],
    cursor: string,
    version: number,
    at = Date.now(),
  ): Promise<boolean> {
    if (this.current?.cursor !== from.cursor) return false;
    for (const c of changes) this.store.applyChange(c);
    this.current = { epoch: from.epoch, cursor };
    this.store.published(version, at);
    return true;
  }
}
