// One shard of keys or accounts as a full load delivered it, held outside the JavaScript heap.
//
// A million keys held as a million JSON strings (plus their ids and map entries) made every garbage
// collection walk and copy them: scavenges that promote each string and major GCs over ~800 MB stalled a
// replica's event loop for hundreds of milliseconds while it loaded. A table keeps its shard's ids and JSON as
// bytes in one ArrayBuffer, with a version per entry and an open-addressing index in typed arrays, so the whole
// set costs the collector a handful of objects per shard. Entities are decoded and parsed only when a request
// first uses them (store.ts keeps the parsed ones).

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * FNV-1a over an id's characters (the same function as contract/policy-feed.ts shardOf, whose result is
 * this mod 256): the low 8 bits pick the shard, the rest the slot in the shard's index.
 */
export function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** idHash of an id given as UTF-8 bytes (without building a string unless it is not ASCII). */
export function idHashBytes(id: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    const b = id[i]!;
    if (b > 127) return idHash(decoder.decode(id));
    h ^= b;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The version an entity's JSON begins with (`{"v":<digits>`, see contract entityJson), or -1. */
export function versionOfBytes(json: Uint8Array): number {
  // {"v":
  if (json.length < 6 || json[0] !== 123 || json[1] !== 34 || json[2] !== 118 || json[3] !== 34 || json[4] !== 58)
    return -1;
  let v = 0;
  let i = 5;
  for (; i < json.length; i++) {
    const c = json[i]!;
    if (c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
  }
  return i === 5 ? -1 : v;
}

/**
 * Whether an entity's JSON is a tombstone, `{"v":<digits>}`: what a shard hash holds for an entity deleted
 * since its epoch began (control-plane/src/snapshot/redis-bus.ts), so that no older version can be written
 * over the deletion. A full load leaves it out: the entity is gone.
 */
export function isTombstoneBytes(json: Uint8Array): boolean {
  if (json.length < 7 || json[json.length - 1] !== 125 || versionOfBytes(json) < 0) return false;
  for (let i = 5; i < json.length - 1; i++) if (json[i]! < 48 || json[i]! > 57) return false;
  return true;
}

/** A table's arrays as they travel between threads (each view's ArrayBuffer is the table's own, never pooled). */
export interface TableParts {
  blob: Uint8Array;
  offs: Uint32Array;
  idLens: Uint32Array;
  vers: Float64Array;
  index: Int32Array;
  count: number;
}

/** An immutable shard: find an id, read its version, decode its JSON. */
export class PolicyTable {
  static readonly empty = new PolicyTable(
    new Uint8Array(0),
    new Uint32Array(0),
    new Uint32Array(0),
    new Float64Array(0),
    new Int32Array(1),
    0,
  );

  private constructor(
    private readonly blob: Uint8Array,
    /** entry i's id starts at offs[i]; its JSON follows at offs[i] + idLens[i] and runs to offs[i + 1] */
    private readonly offs: Uint32Array,
    private readonly idLens: Uint32Array,
    private readonly vers: Float64Array,
    /** slot → entry index + 1 (0: empty), linear probing */
    private readonly index: Int32Array,
    readonly count: number,
  ) {}

  /** @internal TableBuilder's constructor of a finished table. */
  static of(
    blob: Uint8Array,
    offs: Uint32Array,
    idLens: Uint32Array,
    vers: Float64Array,
    index: Int32Array,
    count: number,
  ): PolicyTable {
    return new PolicyTable(blob, offs, idLens, vers, index, count);
  }

  /** The entry of an id (its idHash given), or -1. */
  find(id: string, hash: number): number {
    const mask = this.index.length - 1;
    for (let slot = (hash >>> 8) & mask; ; slot = (slot + 1) & mask) {
      const e = this.index[slot]! - 1;
      if (e < 0) return -1;
      if (this.idEquals(e, id)) return e;
    }
  }

  /**
   * The table's arrays (to hand a table built on the load worker to the main thread, see load-worker.ts), or
   * null for an empty table (its arrays are shared by every empty table and must never be transferred).
   */
  parts(): TableParts | null {
    if (this.count === 0) return null;
    const { blob, offs, idLens, vers, index, count } = this;
    return { blob, offs, idLens, vers, index, count };
  }

  /** A table from parts() (received from the load worker); null is the empty table. */
  static fromParts(p: TableParts | null): PolicyTable {
    return p === null ? PolicyTable.empty : new PolicyTable(p.blob, p.offs, p.idLens, p.vers, p.index, p.count);
  }

  /** Every entry (each id once). */
  *entries(): Generator<number> {
    for (const x of this.index) if (x !== 0) yield x - 1;
  }

  /** Bytes of ids and JSON held (a hint for the size of the next load's builder). */
  get bytes(): number {
    return this.blob.length;
  }

  version(e: number): number {
    return this.vers[e]!;
  }

  json(e: number): string {
    return decoder.decode(this.blob.subarray(this.offs[e]! + this.idLens[e]!, this.offs[e + 1]!));
  }

  id(e: number): string {
    return decoder.decode(this.blob.subarray(this.offs[e]!, this.offs[e]! + this.idLens[e]!));
  }

  /** Entry e's id and JSON as bytes (views into the table, not copies). */
  bytesOf(e: number): [id: Uint8Array, json: Uint8Array] {
    const start = this.offs[e]!;
    const json = start + this.idLens[e]!;
    return [this.blob.subarray(start, json), this.blob.subarray(json, this.offs[e + 1]!)];
  }

  private idEquals(e: number, id: string): boolean {
    const start = this.offs[e]!;
    const len = this.idLens[e]!;
    // ids are key hashes (hex) and UUIDs: compare characters to bytes; anything else through UTF-8
    if (len === id.length) {
      let i = 0;
      for (; i < len; i++) {
        const c = id.charCodeAt(i);
        if (c > 127) break;
        if (this.blob[start + i] !== c) return false;
      }
      if (i === len) return true;
    }
    const bytes = encoder.encode(id);
    if (bytes.length !== len) return false;
    for (let i = 0; i < len; i++) if (this.blob[start + i] !== bytes[i]) return false;
    return true;
  }
}

/** Collects a shard's entries as bytes (a later duplicate id keeps the newer version), then builds its table. */
export class TableBuilder {
  private blob: Uint8Array;
  private used = 0;
  private offs: Uint32Array;
  private idLens: Uint32Array;
  private vers: Float64Array;
  private hashes: Uint32Array;
  count = 0;

  /**
   * Sized for what the shard held before (plus a margin), so a reload of a shard that did not grow allocates
   * each array once: fewer and smaller allocations outside the heap mean fewer garbage collections.
   */
  constructor(like?: { count: number; bytes: number }) {
    const entries = Math.max(32, Math.ceil((like?.count ?? 0) * 1.05) + 2);
    this.blob = new Uint8Array(Math.max(4 * 1024, Math.ceil((like?.bytes ?? 0) * 1.05)));
    this.offs = new Uint32Array(entries);
    this.idLens = new Uint32Array(entries);
    this.vers = new Float64Array(entries);
    this.hashes = new Uint32Array(entries);
  }

  add(id: Uint8Array, json: Uint8Array, hash = idHashBytes(id), version = versionOfBytes(json)): void {
    const need = this.used + id.length + json.length;
    if (need > this.blob.length) {
      const bigger = new Uint8Array(Math.max(need, this.blob.length * 2));
      bigger.set(this.blob.subarray(0, this.used));
      this.blob = bigger;
    }
    if (this.count + 2 > this.offs.length) {
      const grow = <A extends Uint32Array | Float64Array>(a: A, make: (n: number) => A): A => {
        const b = make(a.length * 2);
        b.set(a);
        return b;
      };
      this.offs = grow(this.offs, (n) => new Uint32Array(n));
      this.idLens = grow(this.idLens, (n) => new Uint32Array(n));
      this.vers = grow(this.vers, (n) => new Float64Array(n));
      this.hashes = grow(this.hashes, (n) => new Uint32Array(n));
    }
    const e = this.count++;
    this.offs[e] = this.used;
    this.idLens[e] = id.length;
    this.vers[e] = version;
    this.hashes[e] = hash;
    this.blob.set(id, this.used);
    this.blob.set(json, this.used + id.length);
    this.used = need;
  }

  addString(id: string, json: string, version: number): void {
    this.add(encoder.encode(id), encoder.encode(json), idHash(id), version);
  }

  /** Every entry as [id, json] (an abandoned load hands these on as changes). */
  *entries(): Generator<[string, string, number]> {
    const table = this.build();
    for (const e of table.entries()) yield [table.id(e), table.json(e), table.version(e)];
  }

  /**
   * The table: copied to its exact size, indexed at a load factor of at most one half. `shared`: its arrays in
   * SharedArrayBuffers (the load worker's tables, see load-worker.ts), each copied to its exact size.
   */
  build(shared = false): PolicyTable {
    if (this.count === 0) return PolicyTable.empty;
    let size = 8;
    while (size < this.count * 2) size *= 2;
    const index = shared ? new Int32Array(new SharedArrayBuffer(size * 4)) : new Int32Array(size);
    const mask = size - 1;
    // kept as they are unless more than a fifth is unused (then copied to size); shared: always copied
    const fit = <A extends Uint8Array | Uint32Array | Float64Array>(a: A, n: number): A =>
      (shared ? sharedCopy(a, n) : n * 5 >= a.length * 4 ? a.subarray(0, n) : a.slice(0, n)) as A;
    this.offs[this.count] = this.used; // add() keeps room for this one
    const offs = fit(this.offs, this.count + 1);
    const blob = fit(this.blob, this.used);
    const idLens = fit(this.idLens, this.count);
    const vers = fit(this.vers, this.count);
    const hashes = this.hashes;
    let unique = 0;
    for (let e = 0; e < this.count; e++) {
      const h = hashes[e]!;
      let slot = (h >>> 8) & mask;
      for (; index[slot] !== 0; slot = (slot + 1) & mask) {
        const f = index[slot]! - 1;
        if (hashes[f] === h && sameBytes(blob, offs[f]!, idLens[f]!, offs[e]!, idLens[e]!)) break;
      }
      if (index[slot] === 0) unique++;
      // seen already (HSCAN may return an entry twice): the newer version stays
      else if (vers[e]! < vers[index[slot]! - 1]!) continue;
      index[slot] = e + 1;
    }
    return PolicyTable.of(blob, offs, idLens, vers, index, unique);
  }
}

/** The first n elements of a typed array, copied into a SharedArrayBuffer of their size. */
function sharedCopy<A extends Uint8Array | Uint32Array | Float64Array>(a: A, n: number): A {
  const Kind = a.constructor as new (buffer: SharedArrayBuffer) => A;
  const out = new Kind(new SharedArrayBuffer(Math.max(1, n) * a.BYTES_PER_ELEMENT));
  out.set(a.subarray(0, n));
  return (n === 0 ? out.subarray(0, 0) : out) as A;
}

function sameBytes(blob: Uint8Array, a: number, aLen: number, b: number, bLen: number): boolean {
  if (aLen !== bLen) return false;
  for (let i = 0; i < aLen; i++) if (blob[a + i] !== blob[b + i]) return false;
  return true;
}

export type ShardKind = "key" | "account";

/**
 * A full load's shards being built, each a table of entities and one of money fields (one builder each per
 * shard touched). The same code reads HSCAN's bytes whether the load runs on the main thread (FullLoad in
 * full-load.ts) or on the load worker (load-worker.ts), so both leave out tombstones and read `$<id>` fields alike.
 */
export class ShardBuilders {
  private readonly entities: Record<ShardKind, (TableBuilder | undefined)[]> = { key: [], account: [] };
  private readonly money: Record<ShardKind, (TableBuilder | undefined)[]> = { key: [], account: [] };

  /**
   * `like`: what a shard held before, to size its builder (see TableBuilder's constructor); `shared`: tables
   * built in SharedArrayBuffers (TableBuilder.build).
   */
  constructor(
    private readonly like: (kind: ShardKind, shard: number) => { count: number; bytes: number } | undefined,
    private readonly shared = false,
  ) {}

  private builder(kind: ShardKind, shard: number): TableBuilder {
    return (this.entities[kind][shard] ??= new TableBuilder(this.like(kind, shard)));
  }

  private moneyBuilder(kind: ShardKind, shard: number): TableBuilder {
    return (this.money[kind][shard] ??= new TableBuilder());
  }

  /**
   * One entity as the bytes Redis returned (id and JSON); its version is read from the JSON. A tombstone (a
   * deletion, see isTombstoneBytes) is left out: the shard's new table does not hold the entity. A field named
   * `$<id>` is the entity's newest money change (control-plane/src/snapshot/redis-bus.ts).
   */
  putBytes(kind: ShardKind, id: Uint8Array, json: Uint8Array): void {
    if (id[0] === 36) {
      const own = id.subarray(1);
      const hash = idHashBytes(own);
      this.moneyBuilder(kind, hash & 0xff).add(own, json, hash);
      return;
    }
    if (isTombstoneBytes(json)) return;
    const hash = idHashBytes(id);
    this.builder(kind, hash & 0xff).add(id, json, hash);
  }

  /** One entity (or, `money`, one money change) given as strings. */
  putString(kind: ShardKind, money: boolean, id: string, json: string, v: number): void {
    const shard = idHash(id) & 0xff;
    (money ? this.moneyBuilder(kind, shard) : this.builder(kind, shard)).addString(id, json, v);
  }

  /** The shard's tables as built so far (empty where nothing was put); its builders are forgotten. */
  take(kind: ShardKind, shard: number): { table: PolicyTable; money: PolicyTable } {
    const table = this.entities[kind][shard]?.build(this.shared) ?? PolicyTable.empty;
    const money = this.money[kind][shard]?.build(this.shared) ?? PolicyTable.empty;
    this.entities[kind][shard] = undefined;
    this.money[kind][shard] = undefined;
    return { table, money };
  }

  /** The shards something was put into and not taken yet. */
  *open(): Generator<[ShardKind, number]> {
    for (const kind of ["account", "key"] as const)
      for (let s = 0; s < Math.max(this.entities[kind].length, this.money[kind].length); s++)
        if (this.entities[kind][s] !== undefined || this.money[kind][s] !== undefined) yield [kind, s];
  }
}
