import { describe, expect, it } from "vitest";
import { entityJson, shardOf, versionOf } from "../contract/policy-feed.ts";
import { idHash, idHashBytes, TableBuilder, versionOfBytes } from "./table.ts";

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
});
