import type { SnapshotStore } from "@modelgate/data-plane";
import type { FeedHead, FullWriter, PolicyBus } from "./publisher.ts";

/**
 * Embedded mode: the feed goes straight into the data plane's store in the same process.
 *
 * The store remembers each deleted key or account as a change (its deleted version, so an older one cannot come
 * back) until a full load that began after the deletion, as a replica does in distributed mode. So the head counts
 * the epoch's deletions the store took (`tombstones`) and the entities its full publication wrote (`entities`),
 * like Redis's, and the publisher compacts the same way (compaction.ts): past the threshold it publishes in full
 * into a new in-process epoch, a full load of the store, which serves the previous state of each shard until
 * that shard's new one swaps in, keeps what rounds applied meanwhile, and forgets the deletions before it.
 */
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
      // not committed (the read failed): the load ends, keeping what it put where newer (FullLoad.abandon), so
      // the store folds changes again and says it is not loading
      close: async () => load.abandon(),
      put: async (changes) => {
        for (const c of changes) load.put(c);
      },
      commit: async (cursor, version, entities) => {
        await load.finish(version, Date.now());
        this.current = { epoch, cursor, seq: 0, tombstones: 0, entities };
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
    let tombstones = c.tombstones ?? 0;
    for (const change of changes)
      if (
        this.store.applyChange(change) &&
        change.json === null &&
        (change.kind === "key" || change.kind === "account")
      )
        tombstones++;
    this.current = { ...c, cursor, seq: from.seq + changes.length, tombstones };
    this.store.published(version, at);
    return this.current;
  }
}
