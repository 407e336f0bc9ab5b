import type { AccountSnapshot, KeySnapshot, ModelSnapshot, Snapshot } from "../contract/index.ts";
import {
  accountEntrySchema,
  accountMoneySchema,
  catalogEntrySchema,
  entityJson,
  type EntityKind,
  entityOfMoney,
  isMoneyKind,
  keyEntrySchema,
  keyMoneySchema,
  type MoneyKind,
  type PolicyChange,
  type PolicyKind,
  POLICY_SHARDS,
} from "../contract/index.ts";
import { idHash, PolicyTable, ShardBuilders, TableBuilder } from "./table.ts";

/** A change applied since the shard's table was built: newer than the table's entry, or a deletion. */
interface Changed<T> {
  v: number;
  /** the entity's JSON until first use; null: deleted */
  json: string | null;
  parsed?: T & { v: number };
  /** the full load that was running (or last begun) when it was applied; see Shard.swap */
  gen: number;
}

/** A money change applied since the shard's tables were built (see SnapshotStore.applyChange). */
interface Money {
  v: number;
  json: string;
  /** the full load that was running (or last begun) when it was applied; see Shard.swap */
  gen: number;
}

/** The settled figures of a money change, as they replace the entity's (contract/policy-feed.ts). */
type Figures = { spent: string; balance?: string; budgets?: unknown };

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
class Shard<T extends object> {
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

const shards = <T extends object>() => Array.from({ length: POLICY_SHARDS }, () => new Shard<T>());

/**
 * The data plane's only source of truth on the hot path: keys, accounts and the model catalog as the policy
 * feed delivered them (docs/distributed.md). A change replaces one entity in O(1), and only with a version at
 * least as new as the one held, so a late or duplicated change can never roll policy back.
 *
 * Keys and accounts live in POLICY_SHARDS shards each (the feed's own sharding): what the last full load read,
 * as bytes outside the JavaScript heap (table.ts), and the changes applied since. An entity is decoded, parsed
 * and validated (zod) the first time a request uses it. A full load builds each shard's new table aside and
 * swaps it in whole, so requests are served from the previous state until each shard is complete, and a
 * million keys cost the garbage collector a few objects per shard. If the control plane or Redis goes away the
 * store keeps serving what it has (fail static) and reports its age, so /readyz and metrics can say how stale.
 */
export class SnapshotStore {
  private readonly keys = shards<KeySnapshot>();
  private readonly accounts = shards<AccountSnapshot>();
  private models: Record<string, ModelSnapshot> = {};
  private catalogVersion = -1;
  private highest = 0;
  private receivedAt = 0;
  private publishedAt = 0;
  /** when the control plane was last heard from (its heartbeat); null: in the same process (embedded) */
  private controlPlaneAt: number | null = null;
  private loadingNow: FullLoad | null = null;
  /** full loads begun: a change is tagged with the current one (see Shard.swap) */
  private gen = 0;
  /** full loads completed (the first one included) and how long the last one took */
  fullLoads = 0;
  lastFullLoadMs: number | null = null;

  constructor(private readonly onInvalid: (kind: PolicyKind, id: string, err: unknown) => void = () => undefined) {}

  /** The catalog (what the model list shows) and the version; keys and accounts are looked up one at a time. */
  get current(): { version: number; models: Record<string, ModelSnapshot> } {
    return { version: this.highest, models: this.models };
  }
  /** The highest entity version this replica holds (versions only grow, across full loads too). */
  get version(): number {
    return this.highest;
  }
  /** Milliseconds since this replica last confirmed its policy is current (Infinity before the first). */
  ageMs(now = Date.now()): number {
    return this.receivedAt === 0 ? Number.POSITIVE_INFINITY : now - this.receivedAt;
  }
  get loaded(): boolean {
    return this.receivedAt !== 0;
  }
  /** Whether a full load is in progress (the previous state keeps serving meanwhile). */
  get loading(): boolean {
    return this.loadingNow !== null;
  }
  get size(): { keys: number; accounts: number; models: number } {
    const count = (all: Shard<object>[]) => all.reduce((n, s) => n + s.size, 0);
    return { keys: count(this.keys), accounts: count(this.accounts), models: Object.keys(this.models).length };
  }
  /**
   * Deleted keys and accounts remembered as changes (each keeps its deleted version, so an older one cannot come
   * back) until a full load that began after the deletion: what a feed epoch's compaction bounds.
   */
  get deletions(): number {
    const count = (all: Shard<object>[]) => all.reduce((n, s) => n + s.deletions, 0);
    return count(this.keys) + count(this.accounts);
  }
  /**
   * Milliseconds since the control plane last published or confirmed the policy in use (it does so at least every
   * MODELGATE_REPUBLISH_MS): unlike ageMs, this keeps growing when the control plane is stopped or frozen.
   */
  publishedAgeMs(now = Date.now()): number {
    return this.publishedAt === 0 ? Number.POSITIVE_INFINITY : now - this.publishedAt;
  }
  /** The control plane's heartbeat was seen (the time it wrote, by its clock; null when none is there). */
  heardControlPlane(at: number | null): void {
    this.controlPlaneAt = at ?? 0;
  }
  /** "in-process" (embedded), "up" (heartbeat under 5 s old), or "silent" (older, expired, or never seen). */
  controlPlane(now = Date.now()): { state: "in-process" | "up" | "silent"; heartbeatAgeMs: number | null } {
    if (this.controlPlaneAt === null) return { state: "in-process", heartbeatAgeMs: null };
    const age = this.controlPlaneAt === 0 ? null : Math.max(0, now - this.controlPlaneAt);
    return { state: age !== null && age < 5_000 ? "up" : "silent", heartbeatAgeMs: age };
  }

  /** The feed is confirmed current up to `version`, as the control plane said at `at` (its clock, ms). */
  published(version: number, at: number): void {
    if (version > this.highest) this.highest = version;
    this.receivedAt = Date.now();
    this.publishedAt = Number.isFinite(at) && at > 0 ? at : this.receivedAt;
  }

  /** Marks the current policy as confirmed fresh (the source checked and nothing changed). */
  touch(): void {
    if (this.receivedAt !== 0) this.receivedAt = Date.now();
  }

  /**
   * Applies one change in O(1); false when the store holds a newer version of the entity already.
   *
   * A money change (contract/policy-feed.ts) is kept beside its entity when it is newer than everything held
   * for it (the entity, whose payload carries the figures of its own version, and earlier money changes), and
   * patches the figures of the entity's parsed object in place if a request parsed it already: no entity is
   * parsed or re-created, and policy checks read the patched figures (policy/check.ts compares the strings its
   * compiled forms came from). An entity parsed later gets the newest figures when it is parsed. A money change
   * for an entity the replica does not hold yet is kept too: during a full load the entity's shard may not be
   * swapped in yet (Shard.swap drops it once a load shows the entity gone or the figures no newer).
   */
  applyChange(c: PolicyChange): boolean {
    if (c.kind === "catalog") return this.applyCatalog(c.v, c.json);
    if (isMoneyKind(c.kind)) return this.applyMoney(c.kind, c.id, c.v, c.json);
    const hash = idHash(c.id);
    const shard = (c.kind === "key" ? this.keys : this.accounts)[hash & 0xff] as Shard<object>;
    if (shard.heldVersion(c.id, hash) > c.v) return false;
    shard.change(c.id, { v: c.v, json: c.json, gen: this.gen }, hash);
    // The entity carries its figures: a money change no newer is of no more use; a deleted one's never is.
    const m = shard.money.get(c.id);
    if (m !== undefined && (c.json === null || m.v <= c.v)) shard.money.delete(c.id);
    if (c.v > this.highest) this.highest = c.v;
    if (this.loadingNow === null && shard.foldDue) shard.fold();
    return true;
  }

  private applyMoney(kind: MoneyKind, id: string, v: number, json: string | null): boolean {
    if (json === null) return false;
    const entity = entityOfMoney(kind);
    const hash = idHash(id);
    const shard = (entity === "key" ? this.keys : this.accounts)[hash & 0xff] as Shard<object>;
    if (Math.max(shard.heldVersion(id, hash), shard.moneyVersion(id, hash)) >= v) return false;
    shard.money.set(id, { v, json, gen: this.gen });
    if (v > this.highest) this.highest = v;
    // The objects requests get now: patched in place (the one a lookup returns is the newer of the two).
    const changed = shard.changes.get(id)?.parsed;
    const cached = shard.cache.get(id);
    if (changed !== undefined || cached !== undefined) {
      const figures = this.figures(entity, id, json);
      if (figures === undefined) return false;
      if (changed !== undefined) patch(changed, figures);
      if (cached !== undefined) patch(cached, figures);
    }
    return true;
  }

  /** A money change's figures, validated (the small object alone), or undefined when invalid. */
  private figures(kind: EntityKind, id: string, json: string): Figures | undefined {
    try {
      return (kind === "key" ? keyMoneySchema : accountMoneySchema).parse(JSON.parse(json));
    } catch (err) {
      this.onInvalid(kind === "key" ? "key.money" : "account.money", id, err);
      return undefined;
    }
  }

  /** An entity just parsed, with the figures of a newer money change held for it. */
  private withMoney<T extends object>(
    shard: Shard<T>,
    kind: PolicyKind,
    id: string,
    hash: number,
    parsed: (T & { v: number }) | undefined,
  ): (T & { v: number }) | undefined {
    if (parsed === undefined || (shard.money.size === 0 && shard.moneyTable.count === 0)) return parsed;
    const m = shard.moneyNewer(id, hash, parsed.v);
    if (m === null) return parsed;
    const figures = this.figures(kind as EntityKind, id, m.json);
    if (figures !== undefined) patch(parsed, figures);
    return parsed;
  }

  private applyCatalog(v: number, json: string | null): boolean {
    if (json === null || v < this.catalogVersion) return false;
    try {
      this.models = catalogEntrySchema.parse(JSON.parse(json)).models;
      this.catalogVersion = v;
      if (v > this.highest) this.highest = v;
      return true;
    } catch (err) {
      this.onInvalid("catalog", "", err);
      return false;
    }
  }

  /**
   * Starts a full load: each shard's entities are collected aside and swapped in whole when the shard is
   * complete (FullLoad.shardDone, or finish for the rest), so requests keep being served from the previous
   * state of a shard until its new one is ready, and changes applied meanwhile still win where they are newer.
   * Only one load runs at a time; starting another abandons the first.
   */
  beginFullLoad(): FullLoad {
    this.loadingNow?.abandon();
    this.gen++;
    this.loadingNow = new FullLoad(this, this.gen, (l) => {
      if (this.loadingNow === l) this.loadingNow = null;
    });
    return this.loadingNow;
  }

  /** @internal FullLoad's access to the shards. */
  shard(kind: "key" | "account", n: number): Shard<object> {
    return (kind === "key" ? this.keys : this.accounts)[n] as Shard<object>;
  }

  /** Replaces everything with one whole snapshot (tools and tests); older versions are ignored. */
  apply(next: Snapshot): boolean {
    if (this.loaded && next.version < this.highest) return false;
    const load = this.beginFullLoad();
    for (const [hash, k] of Object.entries(next.keys))
      load.put({ kind: "key", id: hash, v: next.version, json: entityJson(next.version, k) });
    for (const [id, a] of Object.entries(next.accounts))
      load.put({ kind: "account", id, v: next.version, json: entityJson(next.version, a) });
    load.swapAll();
    this.models = next.models;
    this.catalogVersion = next.version;
    this.highest = next.version;
    const built = Date.parse(next.generatedAt);
    this.published(next.version, Number.isFinite(built) ? built : Date.now());
    return true;
  }

  key(hash: string): KeySnapshot | undefined {
    return this.lookup(this.keys, "key", hash, keyEntrySchema);
  }
  account(id: string): AccountSnapshot | undefined {
    return this.lookup(this.accounts, "account", id, accountEntrySchema);
  }
  model(id: string): ModelSnapshot | undefined {
    // own properties only: a client's model name "valueOf" or "constructor" must not find Object.prototype's
    return Object.hasOwn(this.models, id) ? this.models[id] : undefined;
  }

  /** The newest of an entity's change and table entry; parsed and validated once, on first use. */
  private lookup<T extends object>(
    all: Shard<T>[],
    kind: PolicyKind,
    id: string,
    schema: { parse(x: unknown): T & { v: number } },
  ): (T & { v: number }) | undefined {
    const hash = idHash(id);
    const shard = all[hash & 0xff]!;
    const changed = shard.changes.get(id);
    const cached = shard.cache.get(id);
    let e = -1;
    let tv = -1;
    if (cached !== undefined) tv = cached.v;
    else {
      e = shard.table.find(id, hash);
      if (e >= 0) tv = shard.table.version(e);
    }
    if (changed !== undefined && changed.v >= tv) {
      if (changed.parsed !== undefined || changed.json === null) return changed.parsed;
      changed.parsed = this.withMoney(shard, kind, id, hash, this.parse(kind, id, changed.json, schema));
      return changed.parsed;
    }
    if (cached !== undefined) return cached;
    if (e < 0) return undefined;
    // Parsed before the table was replaced: still good if the table holds that same version (its money figures
    // brought up to date as a fresh parse's would be).
    const before = shard.previous.get(id);
    if (before !== undefined) {
      shard.previous.delete(id);
      if (before.v === tv) {
        const kept = this.withMoney(shard, kind, id, hash, before)!;
        shard.remember(id, kept);
        return kept;
      }
    }
    const parsed = this.withMoney(shard, kind, id, hash, this.parse(kind, id, shard.table.json(e), schema));
    if (parsed !== undefined) shard.remember(id, parsed);
    return parsed;
  }

  private parse<T extends object>(
    kind: PolicyKind,
    id: string,
    json: string,
    schema: { parse(x: unknown): T & { v: number } },
  ): (T & { v: number }) | undefined {
    try {
      return schema.parse(JSON.parse(json));
    } catch (err) {
      this.onInvalid(kind, id, err);
      return undefined;
    }
  }
}

/**
 * Puts a money change's figures over an entity's, in place: spent (and an account's balance), and the budgets
 * (each period's limit and bounds with its settled spend, read together with the figures).
 */
function patch(entity: object, figures: Figures): void {
  const e = entity as Figures;
  e.spent = figures.spent;
  if (figures.balance !== undefined) e.balance = figures.balance;
  if (figures.budgets === undefined) delete e.budgets;
  else e.budgets = figures.budgets;
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
    private readonly store: SnapshotStore,
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
