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
} from "../contract/index.ts";
import { FullLoad } from "./full-load.ts";
import { type Shard, shards } from "./shard.ts";
import { idHash } from "./table.ts";

/** The settled figures of a money change, as they replace the entity's (contract/policy-feed.ts). */
type Figures = { spent: string; balance?: string; budgets?: unknown };

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
