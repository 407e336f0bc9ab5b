import { describe, expect, it } from "vitest";
import type { KeySnapshot } from "../contract/snapshot.ts";
import { entityJson, type PolicyChange, shardOf, versionOf, POLICY_SHARDS } from "../contract/policy-feed.ts";
import { SnapshotStore } from "./store.ts";
import { testAccount, testKey as key } from "./test-fixture.ts";

const account = testAccount();
const keyChange = (hash: string, v: number, over: Partial<KeySnapshot> | null = {}): PolicyChange => ({
  kind: "key",
  id: hash,
  v,
  json: over === null ? null : entityJson(v, key(over)),
});

describe("policy entities as JSON", () => {
  it("puts the version first, readable without parsing", () => {
    const json = entityJson(42, key());
    expect(json.startsWith('{"v":42,"id":"k1"')).toBe(true);
    expect(versionOf(json)).toBe(42);
    expect(JSON.parse(json)).toEqual({ v: 42, ...key() });
    expect(versionOf('{"id":1}')).toBe(-1);
    expect(entityJson(3, {})).toBe('{"v":3}');
  });

  it("spreads ids over every shard", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 20_000; i++) seen.add(shardOf(`${i}`.padStart(64, "f")));
    expect(seen.size).toBe(POLICY_SHARDS);
    expect(shardOf("abc")).toBe(shardOf("abc"));
  });
});

describe("SnapshotStore changes", () => {
  it("applies a created, changed and deleted key, each in one step", () => {
    const store = new SnapshotStore();
    expect(store.key("h1")).toBeUndefined();
    expect(store.applyChange(keyChange("h1", 5))).toBe(true);
    expect(store.key("h1")).toMatchObject({ id: "k1", status: "active", v: 5 });
    expect(store.version).toBe(5);
    expect(store.applyChange(keyChange("h1", 7, { status: "revoked" }))).toBe(true);
    expect(store.key("h1")?.status).toBe("revoked");
    expect(store.applyChange(keyChange("h1", 9, null))).toBe(true);
    expect(store.key("h1")).toBeUndefined();
    expect(store.size.keys).toBe(0);
  });

  it("never goes back to an older version, parsed or not", () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("h1", 7, { status: "revoked" }));
    expect(store.applyChange(keyChange("h1", 6, { status: "active" }))).toBe(false);
    expect(store.key("h1")?.status).toBe("revoked"); // parsed now
    expect(store.applyChange(keyChange("h1", 6, { status: "active" }))).toBe(false);
    expect(store.applyChange(keyChange("h1", 6, null))).toBe(false);
    expect(store.key("h1")?.status).toBe("revoked");
    // the same version again (a replay) is harmless
    expect(store.applyChange(keyChange("h1", 7, { status: "revoked" }))).toBe(true);
  });

  it("ignores (and reports) an entity that fails validation, as an unknown key", () => {
    const bad: string[] = [];
    const store = new SnapshotStore((kind, id) => bad.push(`${kind}:${id}`));
    store.applyChange({ kind: "key", id: "h1", v: 1, json: '{"v":1,"id":"k1"}' });
    expect(store.key("h1")).toBeUndefined();
    expect(bad).toEqual(["key:h1"]);
  });

  it("applies accounts and the catalog", () => {
    const store = new SnapshotStore();
    store.applyChange({ kind: "account", id: "a1", v: 3, json: entityJson(3, account) });
    expect(store.account("a1")?.balance).toBe("1000");
    store.applyChange({ kind: "account", id: "a1", v: 4, json: entityJson(4, { ...account, balance: "0" }) });
    expect(store.account("a1")?.balance).toBe("0");
    const model = {
      id: "m-2025-01-01",
      displayName: null,
      reasoning: false,
      price: { input: "1", output: "2", cachedInput: null },
      routes: [],
      createdAt: "2025-01-01T00:00:00.000Z",
    };
    store.applyChange({ kind: "catalog", id: "", v: 10, json: entityJson(10, { models: { [model.id]: model } }) });
    expect(store.model(model.id)).toEqual(model);
    expect(store.applyChange({ kind: "catalog", id: "", v: 9, json: entityJson(9, { models: {} }) })).toBe(false);
    expect(store.current.models).toHaveProperty(model.id);
  });
});

describe("SnapshotStore full loads", () => {
  it("serves the previous state while loading, then drops what the load did not contain", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("kept", 1));
    store.applyChange(keyChange("gone", 2));
    store.published(2, Date.now());
    const load = store.beginFullLoad();
    expect(store.loading).toBe(true);
    load.put(keyChange("kept", 3, { name: "renamed" }));
    load.put(keyChange("new", 4));
    // mid-load: the previous state answers until a shard is complete
    expect(store.key("gone")?.id).toBe("k1");
    expect(store.key("kept")?.name).toBe("test");
    expect(store.key("new")).toBeUndefined();
    await load.finish(4, Date.now());
    expect(store.loading).toBe(false);
    expect(store.key("gone")).toBeUndefined();
    expect(store.key("new")).toBeDefined();
    expect(store.size.keys).toBe(2);
    expect(store.fullLoads).toBe(1);
    expect(store.version).toBe(4);
  });

  it("keeps the parses of keys a full load left at the same version, and parses the changed ones anew", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("same", 1));
    store.applyChange(keyChange("changed", 2));
    const same = store.key("same")!;
    const changed = store.key("changed")!;
    const load = store.beginFullLoad();
    load.put(keyChange("same", 1));
    load.put(keyChange("changed", 3, { name: "renamed" }));
    await load.finish(3, Date.now());
    expect(store.key("same")).toBe(same); // the same object: no parse
    expect(store.key("changed")).not.toBe(changed);
    expect(store.key("changed")).toMatchObject({ name: "renamed", v: 3 });
    // kept across a second swap too, and gone with the key
    const next = store.beginFullLoad();
    next.put(keyChange("same", 1));
    await next.finish(4, Date.now());
    expect(store.key("same")).toBe(same);
    expect(store.key("changed")).toBeUndefined();
  });

  it("swaps each shard in whole once it is complete", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("a", 1));
    const load = store.beginFullLoad();
    load.put(keyChange("a", 2, { name: "from the load" }));
    expect(store.key("a")?.name).toBe("test");
    load.shardDone("key", shardOf("a"));
    expect(store.key("a")?.name).toBe("from the load");
    expect(store.loading).toBe(true);
    await load.finish(2, Date.now());
    expect(store.key("a")?.name).toBe("from the load");
  });

  it("a revocation that lands during a full load wins over the load's older copy", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("h", 1));
    const load = store.beginFullLoad();
    load.put(keyChange("h", 2)); // read from Redis before the revocation was written there
    expect(store.applyChange(keyChange("h", 3, { status: "revoked" }))).toBe(true);
    expect(store.key("h")?.status).toBe("revoked");
    load.shardDone("key", shardOf("h"));
    expect(store.key("h")?.status).toBe("revoked");
    await load.finish(3, Date.now());
    expect(store.key("h")?.status).toBe("revoked");
    // and once a later load holds the revocation itself, the change gives way to the table (a version names one
    // state, so the revocation's parse is taken back as it is; a newer version is parsed from the table)
    const revoked = store.key("h");
    const next = store.beginFullLoad();
    next.put(keyChange("h", 3, { status: "revoked" }));
    await next.finish(3, Date.now());
    expect(store.key("h")).toBe(revoked);
    const later = store.beginFullLoad();
    later.put(keyChange("h", 4, { status: "revoked", name: "loaded" }));
    await later.finish(4, Date.now());
    expect(store.key("h")).toMatchObject({ status: "revoked", name: "loaded" });
  });

  it("a deletion or a creation that lands during a full load is not undone by it", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("deleted", 1));
    const load = store.beginFullLoad();
    load.put(keyChange("deleted", 1));
    store.applyChange(keyChange("deleted", 2, null));
    store.applyChange(keyChange("created", 3)); // after its shard was read: the load does not contain it
    await load.finish(3, Date.now());
    expect(store.key("deleted")).toBeUndefined();
    expect(store.key("created")?.status).toBe("active");
    expect(store.size.keys).toBe(1);
  });

  it("keeps the newer of an entity the load returned twice", async () => {
    const store = new SnapshotStore();
    const enc = new TextEncoder();
    const load = store.beginFullLoad();
    load.putBytes("key", enc.encode("dup"), enc.encode(entityJson(5, key({ name: "newer" }))));
    load.putBytes("key", enc.encode("dup"), enc.encode(entityJson(4, key({ name: "older" }))));
    load.putBytes("key", enc.encode("other"), enc.encode(entityJson(4, key())));
    await load.finish(5, Date.now());
    expect(store.key("dup")).toMatchObject({ name: "newer", v: 5 });
    expect(store.size.keys).toBe(2);
  });

  it("leaves out a tombstone (an entity deleted since its epoch began), also over a change applied before the load", async () => {
    const store = new SnapshotStore();
    const enc = new TextEncoder();
    store.applyChange(keyChange("gone", 3));
    const load = store.beginFullLoad();
    load.putBytes("key", enc.encode("gone"), enc.encode('{"v":4}'));
    load.putBytes("key", enc.encode("kept"), enc.encode(entityJson(4, key())));
    await load.finish(4, Date.now());
    expect(store.key("gone")).toBeUndefined();
    expect(store.key("kept")?.status).toBe("active");
    expect(store.size.keys).toBe(1);
  });

  it("an abandoned load keeps what it put and drops nothing", () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("old", 1));
    const load = store.beginFullLoad();
    load.put(keyChange("new", 2));
    load.abandon();
    expect(store.loading).toBe(false);
    expect(store.size.keys).toBe(2);
    expect(store.fullLoads).toBe(0);
  });

  it("a full load does not replace a newer entity with an older one", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyChange("h", 9, { status: "revoked" }));
    const load = store.beginFullLoad();
    load.put(keyChange("h", 8, { status: "active" }));
    await load.finish(9, Date.now());
    expect(store.key("h")?.status).toBe("revoked");
  });

  it("loads and sweeps many keys while yielding to the event loop", async () => {
    const store = new SnapshotStore();
    for (let i = 0; i < 50_000; i++) store.applyChange(keyChange(`old${i}`, 1));
    const load = store.beginFullLoad();
    for (let i = 0; i < 50_000; i += 2) load.put(keyChange(`old${i}`, 2));
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    await load.finish(2, Date.now());
    clearInterval(ticker);
    expect(store.size.keys).toBe(25_000);
    expect(turns).toBeGreaterThan(0);
  });
});

describe("SnapshotStore folds changes into its tables", () => {
  // ids that fall in one shard (the first 256 / 8 = 32 is below the fold threshold, so FOLD_AT = 128 applies)
  const inShard = (n: number, shard = 7, tag = "id") => {
    const ids: string[] = [];
    for (let i = 0; ids.length < n; i++) if (shardOf(`${tag}${i}`) === shard) ids.push(`${tag}${i}`);
    return ids;
  };

  it("a bulk of changes leaves the heap (folded into the shard's table) and every entity reads the same", () => {
    const store = new SnapshotStore();
    const ids = inShard(1_000);
    for (const [i, id] of ids.entries()) store.applyChange(keyChange(id, i + 1, { name: `n${i}` }));
    const shard = store.shard("key", 7);
    expect(shard.table.count).toBeGreaterThan(800);
    expect(shard.changes.size).toBeLessThan(200);
    expect(store.size.keys).toBe(1_000);
    for (const [i, id] of ids.entries()) expect(store.key(id)).toMatchObject({ name: `n${i}`, v: i + 1 });
    // a folded entity keeps its version: an older one is refused, a newer one applies
    expect(store.applyChange(keyChange(ids[0]!, 0, { name: "older" }))).toBe(false);
    expect(store.key(ids[0]!)?.name).toBe("n0");
    expect(store.applyChange(keyChange(ids[0]!, 5_000, { status: "revoked" }))).toBe(true);
    expect(store.key(ids[0]!)?.status).toBe("revoked");
  });

  it("a deletion stays remembered through folds (counted): an older version arriving late does not bring the entity back; the next full load forgets it", async () => {
    const store = new SnapshotStore();
    const ids = inShard(600, 9);
    for (const [i, id] of ids.entries()) store.applyChange(keyChange(id, i + 1));
    for (const [i, id] of ids.slice(0, 300).entries()) store.applyChange(keyChange(id, 1_000 + i, null));
    // more changes: several folds after the deletions
    for (const [i, id] of ids.slice(300).entries()) store.applyChange(keyChange(id, 2_000 + i, { name: "again" }));
    expect(store.size.keys).toBe(300);
    expect(store.shard("key", 9).table.count).toBeLessThanOrEqual(300);
    for (const id of ids.slice(0, 300)) {
      expect(store.applyChange(keyChange(id, 5))).toBe(false);
      expect(store.key(id)).toBeUndefined();
    }
    for (const id of ids.slice(300)) expect(store.key(id)?.name).toBe("again");
    // counted (store.deletions) through the folds, and forgotten by the next full load, which lacks them
    expect(store.deletions).toBe(300);
    const load = store.beginFullLoad();
    for (const [i, id] of ids.slice(300).entries()) load.put(keyChange(id, 2_000 + i, { name: "again" }));
    await load.finish(3_000, Date.now());
    expect(store.deletions).toBe(0);
    expect(store.shard("key", 9).changes.size).toBe(0);
    for (const id of ids.slice(0, 300)) expect(store.key(id)).toBeUndefined();
    for (const id of ids.slice(300)) expect(store.key(id)?.name).toBe("again");
  });

  it("does not fold while a full load runs: changes applied meanwhile still win over the load", async () => {
    const store = new SnapshotStore();
    const ids = inShard(400, 11);
    const load = store.beginFullLoad();
    for (const id of ids) load.put(keyChange(id, 1, { name: "loaded" }));
    for (const id of ids) store.applyChange(keyChange(id, 2, { name: "changed" }));
    expect(store.shard("key", 11).changes.size).toBe(400);
    await load.finish(1, Date.now());
    for (const id of ids) expect(store.key(id)?.name).toBe("changed");
    // the next change after the load folds the shard
    store.applyChange(keyChange(ids[0]!, 3, { name: "last" }));
    expect(store.shard("key", 11).changes.size).toBe(0);
    expect(store.key(ids[0]!)?.name).toBe("last");
    expect(store.key(ids[1]!)?.name).toBe("changed");
    expect(store.size.keys).toBe(400);
  });
});
