// A full load of the snapshot store (SnapshotStore.beginFullLoad in store.ts): each shard's entities built
// aside and swapped in whole when the shard is complete.
import { entityOfMoney, isMoneyKind, type PolicyChange, POLICY_SHARDS } from "../contract/index.ts";
import type { Shard } from "./shard.ts";
import { type PolicyTable, ShardBuilders } from "./table.ts";

/** What a full load does to the store it loads (SnapshotStore). */
export interface FullLoadTarget {
  shard(kind: "key" | "account", n: number): Shard<object>;
  applyChange(c: PolicyChange): boolean;
  published(version: number, at: number): void;
  fullLoads: number;
  lastFullLoadMs: number | null;
}

/** A full load in progress (see SnapshotStore.beginFullLoad). */
export class FullLoad {
  /** the shards being read here (a load on the main thread; see redis-feed.ts for the load worker's) */
  private readonly builders: ShardBuilders;
  /**
   * What the load worker had read of shards it had not finished when it stopped (see putPartial): applied as
   * changes if this load is abandoned, like the builders' content.
   */
  private partial: { kind: "key" | "account"; table: PolicyTable; money: PolicyTable }[] = [];
  private readonly swapped: Record<"key" | "account", Uint8Array> = {
    key: new Uint8Array(POLICY_SHARDS),
    account: new Uint8Array(POLICY_SHARDS),
  };
  private readonly started = performance.now();
  private done = false;

  constructor(
    private readonly store: FullLoadTarget,
    private readonly gen: number,
    private readonly release: (l: FullLoad) => void,
  ) {
    this.builders = new ShardBuilders((kind, shard) => store.shard(kind, shard).table);
  }

  get active(): boolean {
    return !this.done;
  }

  put(c: PolicyChange): void {
    if (this.done || c.json === null) return;
    if (c.kind === "catalog") {
      this.store.applyChange(c);
      return;
    }
    if (isMoneyKind(c.kind)) this.builders.putString(entityOfMoney(c.kind), true, c.id, c.json, c.v);
    else this.builders.putString(c.kind, false, c.id, c.json, c.v);
  }

  /** One entity as the bytes Redis returned (ShardBuilders.putBytes says how tombstones and money fields go). */
  putBytes(kind: "key" | "account", id: Uint8Array, json: Uint8Array): void {
    if (this.done) return;
    this.builders.putBytes(kind, id, json);
  }

  /** Every entity of the shard has been put: its table replaces the previous one now. */
  shardDone(kind: "key" | "account", shard: number): void {
    if (this.done || this.swapped[kind][shard]) return;
    const { table, money } = this.builders.take(kind, shard);
    this.swapShard(kind, shard, table, money);
  }

  /** A shard's tables, complete, built elsewhere (the load worker): they replace the previous ones now. */
  swapShard(kind: "key" | "account", shard: number, table: PolicyTable, money: PolicyTable): void {
    if (this.done || this.swapped[kind][shard]) return;
    this.swapped[kind][shard] = 1;
    this.store.shard(kind, shard).swap(table, this.gen, money);
  }

  /**
   * What the load worker had read of a shard when it stopped short (cancelled, or Redis failed): not swapped
   * in, but applied as changes if this load is abandoned, as the main thread's own builders are.
   */
  putPartial(kind: "key" | "account", shard: number, table: PolicyTable, money: PolicyTable): void {
    if (this.done || this.swapped[kind][shard]) return;
    this.partial.push({ kind, table, money });
  }

  /** @internal Swaps every shard not swapped yet, at once, and ends (SnapshotStore.apply: not a feed load). */
  swapAll(): void {
    for (const kind of ["account", "key"] as const) for (let s = 0; s < POLICY_SHARDS; s++) this.shardDone(kind, s);
    this.done = true;
    this.release(this);
  }

  /**
   * Swaps in the shards not swapped yet (what the load did not contain is dropped with them), yielding to the
   * event loop between every few, then confirms the load as current.
   */
  async finish(version: number, at: number): Promise<void> {
    let n = 0;
    for (const kind of ["account", "key"] as const)
      for (let s = 0; s < POLICY_SHARDS; s++) {
        if (this.done) return;
        if (this.swapped[kind][s]) continue;
        this.shardDone(kind, s);
        if (++n % 16 === 0) await new Promise((r) => setImmediate(r));
      }
    if (!this.done) this.complete(version, at);
  }

  private complete(version: number, at: number): void {
    this.done = true;
    this.store.fullLoads++;
    this.store.lastFullLoadMs = Math.round(performance.now() - this.started);
    this.store.published(version, at);
    this.release(this);
  }

  /**
   * Gives up (Redis failed, or a newer epoch appeared): the shards swapped in stay, and what was put into the
   * others is applied as changes where it is newer than what is held; nothing is dropped.
   */
  abandon(): void {
    if (this.done) return;
    this.done = true;
    const read = [...this.builders.open()].map(([kind, shard]) => ({ kind, ...this.builders.take(kind, shard) }));
    for (const { kind, table, money } of [...read, ...this.partial]) {
      for (const e of table.entries())
        this.store.applyChange({ kind, id: table.id(e), v: table.version(e), json: table.json(e) });
      const moneyKind = kind === "key" ? "key.money" : "account.money";
      for (const e of money.entries())
        this.store.applyChange({ kind: moneyKind, id: money.id(e), v: money.version(e), json: money.json(e) });
    }
    this.partial = [];
    this.release(this);
  }
}
