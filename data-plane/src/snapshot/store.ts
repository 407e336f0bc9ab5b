import type { AccountSnapshot, KeySnapshot, ModelSnapshot, Snapshot } from "../contract/index.ts";
import {
  accountEntrySchema,
  catalogEntrySchema,
  entityJson,
  keyEntrySchema,
  type PolicyChange,
  type PolicyKind,
  versionOf,
} from "../contract/index.ts";

type Held<T> = string | (T & { v: number });

const heldVersion = (e: Held<object>): number => (typeof e === "string" ? versionOf(e) : e.v);

/**
 * The data plane's only source of truth on the hot path: keys, accounts and the model catalog as the policy
 * feed delivered them (docs/distributed.md). A change replaces one entity in O(1), and only with a version at
 * least as new as the one held, so a late or duplicated change can never roll policy back.
 *
 * Keys and accounts are held as the JSON they arrived in and parsed (and validated) the first time a request
 * uses them: a full load of a million keys does no parsing at all, and memory holds one compact string per key
 * rather than an object graph. If the control plane or Redis goes away the store keeps serving what it has
 * (fail static) and reports its age, so /readyz and metrics can say how stale it is.
 */
export class SnapshotStore {
  private readonly keys = new Map<string, Held<KeySnapshot>>();
  private readonly accounts = new Map<string, Held<AccountSnapshot>>();
  private models: Record<string, ModelSnapshot> = {};
  private catalogVersion = -1;
  private highest = 0;
  private receivedAt = 0;
  private publishedAt = 0;
  /** when the control plane was last heard from (its heartbeat); null: in the same process (embedded) */
  private controlPlaneAt: number | null = null;
  private loadingNow: FullLoad | null = null;
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
    return { keys: this.keys.size, accounts: this.accounts.size, models: Object.keys(this.models).length };
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

  /** Applies one change in O(1); false when the store holds a newer version of the entity already. */
  applyChange(c: PolicyChange): boolean {
    if (c.kind === "catalog") return this.applyCatalog(c.v, c.json);
    const map = (c.kind === "key" ? this.keys : this.accounts) as Map<string, Held<object>>;
    const held = map.get(c.id);
    if (held !== undefined && heldVersion(held) > c.v) return false;
    if (c.json === null) map.delete(c.id);
    else map.set(c.id, c.json);
    if (c.v > this.highest) this.highest = c.v;
    return true;
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
   * Starts a full load: entities are put into the live maps as they arrive (each at least as new as what it
   * replaces, so requests keep being served from a state that only gets fresher), and finish() then drops the
   * entities the load did not contain. Only one load runs at a time; starting another abandons the first.
   */
  beginFullLoad(): FullLoad {
    this.loadingNow = new FullLoad(this, (l) => {
      if (this.loadingNow === l) this.loadingNow = null;
    });
    return this.loadingNow;
  }

  /** @internal FullLoad's access to the maps: drops unseen entities, pausing every 20,000 entries. */
  *sweep(seenKeys: Set<string>, seenAccounts: Set<string>): Generator<void> {
    for (const [map, seen] of [
      [this.keys, seenKeys],
      [this.accounts, seenAccounts],
    ] as const) {
      let n = 0;
      for (const id of map.keys()) {
        if (!seen.has(id)) map.delete(id);
        if (++n % 20_000 === 0) yield;
      }
    }
  }

  /** Replaces everything with one whole snapshot (tools and tests); older versions are ignored. */
  apply(next: Snapshot): boolean {
    if (this.loaded && next.version < this.highest) return false;
    this.keys.clear();
    this.accounts.clear();
    for (const [hash, k] of Object.entries(next.keys)) this.keys.set(hash, entityJson(next.version, k));
    for (const [id, a] of Object.entries(next.accounts)) this.accounts.set(id, entityJson(next.version, a));
    this.models = next.models;
    this.catalogVersion = next.version;
    this.highest = next.version;
    const built = Date.parse(next.generatedAt);
    this.published(next.version, Number.isFinite(built) ? built : Date.now());
    return true;
  }

  key(hash: string): KeySnapshot | undefined {
    const held = this.keys.get(hash);
    if (typeof held !== "string") return held;
    return this.parse(this.keys, "key", hash, held, keyEntrySchema);
  }
  account(id: string): AccountSnapshot | undefined {
    const held = this.accounts.get(id);
    if (typeof held !== "string") return held;
    return this.parse(this.accounts, "account", id, held, accountEntrySchema);
  }
  model(id: string): ModelSnapshot | undefined {
    return this.models[id];
  }

  /** First use of an entity: parse and validate it once, and keep the object in place of the string. */
  private parse<T extends object>(
    map: Map<string, Held<T>>,
    kind: PolicyKind,
    id: string,
    json: string,
    schema: { parse(x: unknown): T & { v: number } },
  ): (T & { v: number }) | undefined {
    try {
      const entity = schema.parse(JSON.parse(json));
      map.set(id, entity);
      return entity;
    } catch (err) {
      this.onInvalid(kind, id, err);
      return undefined;
    }
  }
}

/** A full load in progress (see SnapshotStore.beginFullLoad). */
export class FullLoad {
  private readonly seenKeys = new Set<string>();
  private readonly seenAccounts = new Set<string>();
  private readonly started = performance.now();
  private done = false;

  constructor(
    private readonly store: SnapshotStore,
    private readonly release: (l: FullLoad) => void,
  ) {}

  put(c: PolicyChange): void {
    if (this.done || c.json === null) return;
    if (c.kind === "catalog") {
      this.store.applyChange(c);
      return;
    }
    (c.kind === "key" ? this.seenKeys : this.seenAccounts).add(c.id);
    this.store.applyChange(c);
  }

  /**
   * Drops what the load did not contain, yielding to the event loop every 20,000 entries, then confirms the
   * load as current.
   */
  async finish(version: number, at: number): Promise<void> {
    if (this.done) return;
    for (const _ of this.store.sweep(this.seenKeys, this.seenAccounts)) await new Promise((r) => setImmediate(r));
    this.done = true;
    this.store.fullLoads++;
    this.store.lastFullLoadMs = Math.round(performance.now() - this.started);
    this.store.published(version, at);
    this.release(this);
  }

  /** Gives up (Redis failed, or a newer epoch appeared): what was put stays, as it is newer; nothing is dropped. */
  abandon(): void {
    this.done = true;
    this.release(this);
  }
}
