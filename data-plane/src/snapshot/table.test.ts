import { describe, expect, it } from "vitest";
import { entityJson, shardOf, versionOf } from "../contract/policy-feed.ts";
import { idHash, idHashBytes, PolicyTable, ShardBuilders, TableBuilder, versionOfBytes } from "./table.ts";

const enc = new TextEncoder();

describe("policy tables (a shard's entities as bytes)", () => {
  it("hashes ids as the feed shards them, from strings and from bytes alike", () => {
    for (const id of ["", "abc", "f".repeat(64), "7d1c1f0e-5d1b-4c2b-9d2a-0c4b3f1e2a9d", "clé-ünïcode-✓"]) {
      expect(idHash(id) % 256).toBe(shardOf(id));
      expect(idHashBytes(enc.encode(id))).toBe(idHash(id));
    }
  });

  it("reads an entity's version from its bytes as from its string", () => {
    for (const json of [
      entityJson(0, {}),
      entityJson(42, { a: 1 }),
      entityJson(9007199254740991, { b: 2 }),
      "{}",
      '{"v":x}',
    ])
      expect(versionOfBytes(enc.encode(json))).toBe(versionOf(json));
  });

  it("finds every entity it holds and none it does not", () => {
    const b = new TableBuilder();
    const ids = Array.from({ length: 5_000 }, (_, i) => (i % 7 === 0 ? `ключ-${i}` : `${i}`.padStart(64, "0")));
    ids.forEach((id, i) => b.addString(id, entityJson(i, { n: i }), i));
    const t = b.build();
    expect(t.count).toBe(ids.length);
    ids.forEach((id, i) => {
      const e = t.find(id, idHash(id));
      expect(e).toBeGreaterThanOrEqual(0);
      expect(t.version(e)).toBe(i);
      expect(JSON.parse(t.json(e))).toEqual({ v: i, n: i });
      expect(t.id(e)).toBe(id);
    });
    for (const id of ["absent", `${1}`.padStart(63, "0"), "ключ-1", ""]) expect(t.find(id, idHash(id))).toBe(-1);
    expect([...t.entries()].length).toBe(ids.length);
  });

  it("an empty table finds nothing", () => {
    const t = new TableBuilder().build();
    expect(t.count).toBe(0);
    expect(t.find("x", idHash("x"))).toBe(-1);
  });

  it("moves to another thread whole: its arrays' own buffers transfer (none from Node's Buffer pool) and it reads the same there", () => {
    // Built from Buffers as ioredis hands them (slices of a shared pool), as the load worker builds it.
    const b = new ShardBuilders(() => ({ count: 10, bytes: 100 }));
    const ids = Array.from({ length: 300 }, (_, i) => `key-${i}`);
    for (const [i, id] of ids.entries()) b.putBytes("key", Buffer.from(id), Buffer.from(entityJson(i + 1, { n: i })));
    b.putBytes("key", Buffer.from("gone"), Buffer.from('{"v":9}')); // a tombstone: left out
    b.putBytes("key", Buffer.from("$key-3"), Buffer.from('{"v":99,"spent":"5"}')); // key-3's money field
    const shards = [...b.open()];
    const moved = shards.map(([kind, shard]) => {
      const { table, money } = b.take(kind, shard);
      const parts = [table.parts(), money.parts()];
      const transfer = parts.flatMap((p) =>
        p ? [p.blob, p.offs, p.idLens, p.vers, p.index].map((a) => a.buffer) : [],
      );
      // what postMessage does with a transfer list; Node's Buffer pool is untransferable (it would stay attached)
      const [t, m] = structuredClone(parts, { transfer });
      for (const a of transfer) expect(a.byteLength).toBe(0); // moved, not copied
      return { table: PolicyTable.fromParts(t!), money: PolicyTable.fromParts(m!) };
    });
    expect([...b.open()]).toEqual([]);
    const find = (id: string) => {
      const { table } = moved[shards.findIndex(([, s]) => s === (idHash(id) & 0xff))]!;
      const e = table.find(id, idHash(id));
      return e < 0 ? undefined : JSON.parse(table.json(e));
    };
    for (const [i, id] of ids.entries()) expect(find(id)).toEqual({ v: i + 1, n: i });
    expect(shards.some(([, s]) => s === (idHash("gone") & 0xff)) ? find("gone") : undefined).toBeUndefined();
    const { money } = moved[shards.findIndex(([, s]) => s === (idHash("key-3") & 0xff))]!;
    expect(money.json(money.find("key-3", idHash("key-3")))).toBe('{"v":99,"spent":"5"}');
    expect(PolicyTable.fromParts(PolicyTable.empty.parts())).toBe(PolicyTable.empty);
  });

  it("shared: every array of a built table is in a SharedArrayBuffer of its size; another thread sees the same table without a copy", () => {
    const b = new ShardBuilders(() => undefined, true);
    const ids = Array.from({ length: 200 }, (_, i) => `key-${i}`);
    for (const [i, id] of ids.entries()) b.putBytes("key", Buffer.from(id), Buffer.from(entityJson(i + 1, { n: i })));
    b.putBytes("key", Buffer.from("$key-3"), Buffer.from('{"v":99,"spent":"5"}'));
    for (const [kind, shard] of [...b.open()]) {
      const { table, money } = b.take(kind, shard);
      for (const p of [table.parts(), money.parts()]) {
        if (p === null) continue;
        for (const a of [p.blob, p.offs, p.idLens, p.vers, p.index]) {
          expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
          expect(a.byteLength).toBe(a.buffer.byteLength); // copied to size: nothing unused is shared
        }
      }
      // what postMessage does with a SharedArrayBuffer: the other side gets the same memory
      const [t] = structuredClone([table.parts()]);
      expect(t!.blob.buffer).not.toBe(table.parts()!.blob.buffer);
      table.parts()!.blob[0] = table.parts()!.blob[0]! ^ 0xff;
      expect(t!.blob[0]).toBe(table.parts()!.blob[0]);
      table.parts()!.blob[0] = table.parts()!.blob[0]! ^ 0xff;
      const there = PolicyTable.fromParts(t!);
      for (const e of table.entries())
        expect(there.json(there.find(table.id(e), idHash(table.id(e))))).toBe(table.json(e));
    }
  });
});
