import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entityJson, type PolicyChange } from "../contract/policy-feed.ts";
import { SnapshotStore } from "./store.ts";
import { idHash } from "./table.ts";
import { testKey } from "./test-fixture.ts";

// The store's key count is made once and then kept up by each change (store.ts Shard.change), not recounted
// on every readiness probe. Checked against a model of what the store holds: after any mix of full loads
// (tables), creations, updates, deletions and stale changes, read at any point, it is the number of keys a
// lookup finds. The count of deletions remembered (store.deletions) is kept up the same way.

const ids = ["a", "b", "c", "d", "e", "f"];
type Op =
  { op: "change"; id: string; v: number; del: boolean } | { op: "load"; present: string[]; v: number } | { op: "size" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("change" as const),
      id: fc.constantFrom(...ids),
      v: fc.integer({ min: 1, max: 40 }),
      del: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("load" as const),
      present: fc.subarray(ids),
      v: fc.integer({ min: 1, max: 40 }),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ op: "size" as const }) },
);

const change = (id: string, v: number, del: boolean): PolicyChange => ({
  kind: "key",
  id,
  v,
  json: del ? null : entityJson(v, testKey({ name: `${id}@${v}` })),
});

describe("SnapshotStore's key count", () => {
  it("follows every change once counted, as a lookup of each key would count them", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), async (ops) => {
        const store = new SnapshotStore();
        for (const o of ops) {
          if (o.op === "change") store.applyChange(change(o.id, o.v, o.del));
          else if (o.op === "load") {
            const load = store.beginFullLoad();
            for (const id of o.present) load.put(change(id, o.v, false));
            await load.finish(o.v, Date.now());
          }
          const found = ids.filter((id) => store.key(id) !== undefined).length;
          if (o.op === "size") expect(store.size.keys).toBe(found);
          // the deletions remembered, likewise kept up: each id whose change held is a deletion
          expect(store.deletions).toBe(
            ids.filter((id) => store.shard("key", idHash(id) & 0xff).changes.get(id)?.json === null).length,
          );
        }
        expect(store.size.keys).toBe(ids.filter((id) => store.key(id) !== undefined).length);
      }),
      { numRuns: 400 },
    );
  });
});
