// One shard of the snapshot store's keys or accounts (store.ts): the table a full load built, the changes
// applied since, the money changes over them and the entities parsed for requests.
import { POLICY_SHARDS } from "../contract/index.ts";
import { idHash, PolicyTable, TableBuilder } from "./table.ts";

/** A change applied since the shard's table was built: newer than the table's entry, or a deletion. */
interface Changed<T> {
  v: number;
  /** the entity's JSON until first use; null: deleted */
  json: string | null;
  parsed?: T & { v: number };
  /** the full load that was running (or last begun) when it was applied; see Shard.swap */
  gen: number;
}

/** A money change applied since the shard's tables were built (see SnapshotStore.applyChange in store.ts). */
interface Money {
  v: number;
  json: string;
  /** the full load that was running (or last begun) when it was applied; see Shard.swap */
  gen: number;
}

/**
 * Parsed entities kept per shard, for the keys and accounts requests use; past this the shard's set starts over
 * (the old set kept as Shard.previous, from which a lookup takes back what it uses).
 */
const CACHE_PER_SHARD = 256;

/**
 * Changes a shard keeps on the heap before they are folded into its table (see Shard.fold): at least this many,
 * or an eighth of the table's entries, so folding copies each entry about eight times per its table's size in
 * changes and the heap holds at most about an eighth of the set as changes (a bulk import arriving as changes
 * would otherwise leave every new key on the heap until the next full load).
 */
const FOLD_AT = 128;

/**
 * One of POLICY_SHARDS shards of keys or accounts: the table the last full load built (bytes, off the heap,
 * see table.ts), the changes applied since, and the entities parsed for requests. Looking an entity up takes
 * the newest version of the three.
 */
export class Shard<T extends object> {
  table = PolicyTable.empty;
  readonly changes = new Map<string, Changed<T>>();
  cache = new Map<string, T & { v: number }>();
  /**
   * The parses of the cache before the table was last replaced (a full load's swap, a fold) or the cache
   * filled: a lookup takes one back when the table holds the same version (one table lookup, no parse). Without
   * it every swap made each key in use parse its JSON again on its next call, a burst of parsing and
   * promoted garbage on the request thread right after each shard of a full load went in.
   */
  previous = new Map<string, T & { v: number }>();
  /** money changes newer than the entity held: the settled figures over it (see SnapshotStore.applyChange) */
  readonly money = new Map<string, Money>();
  /** the money changes a full load read (distributed: the shard hash's `$<id>` fields), as bytes */
  moneyTable = PolicyTable.empty;
  /** the size, counted when first asked (readiness, metrics), then kept up by each change until a swap or fold */
  private counted = -1;
  /** deletions the last fold kept as changes (not counted towards the next fold) */
  private unfolded = 0;
  /** the changes that are deletions: what the shard remembers of deleted entities (kept up by every step) */
  deletions = 0;

  change(id: string, c: Changed<T>, hash: number): void {
    // The count, once made, follows each change (one table lookup) instead of being made again: readiness
    // probes and metrics ask for it, and recounting walks every change held (tens of thousands during a bulk
    // import: a stall of milliseconds per probe).
    const before = this.changes.get(id);
    if (this.counted >= 0) {
      const e = this.table.find(id, hash);
      const tv = e < 0 ? -1 : this.table.version(e);
      this.counted += adds(c, e, tv) - (before === undefined ? 0 : adds(before, e, tv));
    }
    this.deletions += (c.json === null ? 1 : 0) - (before?.json === null ? 1 : 0);
    this.changes.set(id, c);
    this.cache.delete(id);
    this.previous.delete(id);
  }

  /** The table changed (or the cache is full): the parses so far may only be taken back verified (see previous). */
  retire(): void {
    this.previous = this.cache;
    this.cache = new Map();
  }

  /** Keeps a parse for the next lookups. */
  remember(id: string, parsed: T & { v: number }): void {
    if (this.cache.size >= CACHE_PER_SHARD) this.retire();
    this.cache.set(id, parsed);
  }

  /** The version held for an id (-1: none), whichever of the table and the changes has it. */
  heldVersion(id: string, hash: number): number {
    const c = this.changes.get(id);
    const cached = this.cache.get(id);
    let v = cached !== undefined ? cached.v : -1;
    if (cached === undefined) {
      const e = this.table.find(id, hash);
      if (e >= 0) v = this.table.version(e);
    }
    return c !== undefined && c.v > v ? c.v : v;
  }

  /** The version of the newest money change held for an id (-1: none), applied since the load or loaded. */
  moneyVersion(id: string, hash: number): number {
    const m = this.money.get(id);
    let v = m !== undefined ? m.v : -1;
    if (this.moneyTable.count > 0) {
      const e = this.moneyTable.find(id, hash);
      if (e >= 0 && this.moneyTable.version(e) > v) v = this.moneyTable.version(e);
    }
    return v;
  }

  /** The newest money change's JSON for an id if newer than `than`, else null. */
  moneyNewer(id: string, hash: number, than: number): { v: number; json: string } | null {
    const m = this.money.get(id);
    let best: { v: number; json: string } | null = m !== undefined && m.v > than ? m : null;
    if (this.moneyTable.count > 0) {
      const e = this.moneyTable.find(id, hash);
      if (e >= 0 && this.moneyTable.version(e) > (best?.v ?? than))
        best = { v: this.moneyTable.version(e), json: this.moneyTable.json(e) };
    }
    return best;
  }

  /**
   * Puts in the table a full load built. A change applied before that load began is in the table already, or
   * a newer version of its entity is, or (a tombstone, left out) its deletion: the control plane writes a change
   * into its shard before it appends the change's stream entry, and the load read the head before the shards.
   * A change applied while the load ran stays, and wins wherever it is newer.
   */
  swap(table: PolicyTable, gen: number, moneyTable: PolicyTable = PolicyTable.empty): void {
    this.retire();
    for (const [id, c] of this.changes) {
      if (c.gen >= gen) continue;
      const e = table.find(id, idHash(id));
      if (e < 0 || table.version(e) >= c.v) {
        this.changes.delete(id);
        if (c.json === null) this.deletions--;
        if (c.parsed !== undefined) this.previous.set(id, c.parsed); // taken back if the table holds its version
      }
    }
    // Money changes likewise: one applied before the load began is in what it read (the entity, or its money
    // field, at that version or newer), or its entity is gone.
    for (const [id, m] of this.money) {
      if (m.gen >= gen) continue;
      const hash = idHash(id);
      const e = table.find(id, hash);
      if (e < 0 && !this.changes.has(id)) {
        this.money.delete(id);
        continue;
      }
      const me = moneyTable.find(id, hash);
      if (Math.max(e < 0 ? -1 : table.version(e), me < 0 ? -1 : moneyTable.version(me)) >= m.v) this.money.delete(id);
    }
    this.moneyTable = moneyTable;
    this.table = table;
    this.counted = -1;
    this.unfolded = Math.min(this.unfolded, this.changes.size);
  }

  /** Whether enough changes wait on the heap to fold them into the table. */
  get foldDue(): boolean {
    return this.changes.size - this.unfolded >= Math.max(FOLD_AT, this.table.count >>> 3);
  }

  /**
   * Builds the table anew from the table and the changes (each entity at the newer of its two versions) and
   * forgets the changes it took in. A deletion stays a change (it remembers the deleted version, so an older one
   * arriving late cannot bring the entity back) and its entity leaves the table. Only while no full load runs
   * (that load's swap decides by which changes it began before).
   */
  fold(): void {
    const table = this.table;
    const taken = new Set<number>();
    const kept: [string, Changed<T>][] = [];
    let bytes = table.bytes;
    for (const [id, c] of this.changes) {
      const e = table.find(id, idHash(id));
      if (e >= 0) {
        if (table.version(e) > c.v) continue; // the table's is newer: the change goes
        taken.add(e);
      }
      if (c.json === null) kept.push([id, c]);
      else bytes += id.length + c.json.length * 3;
    }
    const b = new TableBuilder({ count: table.count + this.changes.size, bytes });
    for (const e of table.entries()) {
      if (taken.has(e)) continue;
      const [id, json] = table.bytesOf(e);
      b.add(id, json, undefined, table.version(e));
    }
    for (const [id, c] of this.changes) {
      if (c.json === null) continue;
      const e = table.find(id, idHash(id));
      if (e >= 0 && !taken.has(e)) continue;
      b.addString(id, c.json, c.v);
    }
    this.table = b.build();
    this.retire();
    // the parses of the changes taken in, taken back by their next lookups (the table holds their versions)
    for (const [id, c] of this.changes) if (c.parsed !== undefined) this.previous.set(id, c.parsed);
    this.changes.clear();
    for (const [id, c] of kept) this.changes.set(id, c);
    this.unfolded = kept.length;
    this.deletions = kept.length;
    this.counted = -1;
  }

  /** How many entities this shard holds (the table's, plus changes that add, less deletions that apply). */
  get size(): number {
    if (this.counted >= 0) return this.counted;
    let n = this.table.count;
    for (const [id, c] of this.changes) {
      const e = this.table.find(id, idHash(id));
      n += adds(c, e, e < 0 ? -1 : this.table.version(e));
    }
    this.counted = n;
    return n;
  }
}

/**
 * What a change adds to its shard's count over the table's: 1 for an entity the table lacks, -1 for a deletion
 * of one the table holds at that version or older, else 0 (`e` the table's entry or -1, `tv` its version).
 */
function adds(c: { v: number; json: string | null }, e: number, tv: number): number {
  if (c.json !== null) return e < 0 ? 1 : 0;
  return e >= 0 && c.v >= tv ? -1 : 0;
}

/** One Shard per POLICY_SHARDS, for keys or for accounts. */
export const shards = <T extends object>() => Array.from({ length: POLICY_SHARDS }, () => new Shard<T>());
