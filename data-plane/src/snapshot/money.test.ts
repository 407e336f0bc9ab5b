import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import { entityJson, type PolicyChange } from "../contract/policy-feed.ts";
import { checkKeyPolicy } from "../policy/check.ts";
import { MemorySpendCounter } from "../billing/spend.ts";
import { SnapshotStore } from "./store.ts";
import { testAccount as account, testKey as key } from "./test-fixture.ts";

// Money changes (contract/policy-feed.ts): a key's or an account's settled figures alone, patched over the
// entity held. Versions are one sequence per entity's state, so whatever order payloads arrive in, a replica
// ends at the newest state and never goes back, for the policy and for the figures alike.

const keyAt = (v: number, over: Partial<KeySnapshot> | null = {}): PolicyChange => ({
  kind: "key",
  id: "h1",
  v,
  json: over === null ? null : entityJson(v, key(over)),
});
const keyMoney = (v: number, spent: string, extra: object = {}): PolicyChange => ({
  kind: "key.money",
  id: "h1",
  v,
  json: JSON.stringify({ v, spent, ...extra }),
});
const accountAt = (v: number, over: Partial<AccountSnapshot> = {}): PolicyChange => ({
  kind: "account",
  id: "a1",
  v,
  json: entityJson(v, account(over)),
});
const accountMoney = (v: number, balance: string, spent: string): PolicyChange => ({
  kind: "account.money",
  id: "a1",
  v,
  json: JSON.stringify({ v, balance, spent }),
});

describe("money changes", () => {
  it("patch the settled figures of the object requests already hold, in place", () => {
    const store = new SnapshotStore();
    store.applyChange(keyAt(5, { quota: "100" }));
    store.applyChange(accountAt(6));
    const k = store.key("h1")!;
    const a = store.account("a1")!;
    const input = { key: k, account: a, model: "m", clientIp: null, now: Date.now() };
    const none = { keySpent: 0n, accountSpent: 0n };
    expect(checkKeyPolicy({ ...input, spend: none })).toBeNull();
    expect(checkKeyPolicy({ ...input, spend: { keySpent: 60n, accountSpent: 0n } })).toBeNull();
    // settlement: 60 of the key's quota is settled; the running counter still says 60 in all
    expect(store.applyChange(keyMoney(7, "60"))).toBe(true);
    expect(store.key("h1")).toBe(k);
    expect(k).toMatchObject({ spent: "60", v: 5, quota: "100" });
    expect(checkKeyPolicy({ ...input, spend: { keySpent: 40n, accountSpent: 0n } })?.code).toBe("insufficient_quota");
    expect(checkKeyPolicy({ ...input, spend: { keySpent: 39n, accountSpent: 0n } })).toBeNull();
    // the balance runs out by settlement alone
    expect(store.applyChange(accountMoney(8, "0", "1000"))).toBe(true);
    expect(store.account("a1")).toBe(a);
    expect(checkKeyPolicy({ ...input, spend: none })?.code).toBe("insufficient_balance");
    expect(store.version).toBe(8);
  });

  it("the unsettled spend the counters report shrinks as figures settle", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyAt(1));
    store.applyChange(accountAt(2));
    const counter = new MemorySpendCounter();
    await counter.add(store.key("h1")!, store.account("a1")!, 30n);
    expect(counter.get(store.key("h1")!, store.account("a1")!)).toEqual({ keySpent: 30n, accountSpent: 30n });
    store.applyChange(keyMoney(3, "30"));
    store.applyChange(accountMoney(4, "970", "30"));
    expect(counter.get(store.key("h1")!, store.account("a1")!)).toEqual({ keySpent: 0n, accountSpent: 0n });
  });

  it("an entity parsed later gets the newer figures; an older money change or entity never undoes a newer one", () => {
    const store = new SnapshotStore();
    store.applyChange(keyAt(5));
    expect(store.applyChange(keyMoney(7, "70"))).toBe(true);
    expect(store.key("h1")).toMatchObject({ spent: "70", status: "active" }); // parsed now, patched
    expect(store.applyChange(keyMoney(6, "60"))).toBe(false);
    expect(store.applyChange(keyMoney(7, "70"))).toBe(false);
    // a revocation read before that settlement (its payload carries spent 50): policy moves, figures stay
    expect(store.applyChange(keyAt(6, { status: "revoked", spent: "50" }))).toBe(true);
    expect(store.key("h1")).toMatchObject({ status: "revoked", spent: "70" });
    // an entity read after (state 9) carries its own, newer figures; money older than it is refused
    expect(store.applyChange(keyAt(9, { status: "revoked", spent: "90" }))).toBe(true);
    expect(store.applyChange(keyMoney(8, "80"))).toBe(false);
    expect(store.key("h1")).toMatchObject({ status: "revoked", spent: "90" });
  });

  it("carry the budgets whole (limits, periods and their settled spend)", () => {
    const store = new SnapshotStore();
    const day = { limit: "100", start: "2026-01-01T00:00:00.000Z", end: "2026-01-02T00:00:00.000Z", spent: "0" };
    store.applyChange(keyAt(1, { budgets: { day } }));
    expect(store.key("h1")?.budgets?.day?.spent).toBe("0");
    store.applyChange(keyMoney(2, "40", { budgets: { day: { ...day, spent: "40" } } }));
    expect(store.key("h1")?.budgets?.day?.spent).toBe("40");
    store.applyChange(keyMoney(3, "50"));
    expect(store.key("h1")?.budgets).toBeUndefined();
  });

  it("a money change for an entity not held yet is kept until it arrives; a deletion drops it", () => {
    const store = new SnapshotStore();
    expect(store.applyChange(keyMoney(4, "40"))).toBe(true);
    expect(store.key("h1")).toBeUndefined();
    store.applyChange(keyAt(3));
    expect(store.key("h1")?.spent).toBe("40");
    store.applyChange(keyAt(5, null));
    expect(store.key("h1")).toBeUndefined();
    store.applyChange(keyAt(5, {}));
    expect(store.key("h1")?.spent).toBe("0");
  });

  it("an invalid money change is reported and leaves the figures alone", () => {
    const bad: string[] = [];
    const store = new SnapshotStore((kind, id) => bad.push(`${kind}:${id}`));
    store.applyChange(keyAt(1, { spent: "10" }));
    expect(store.key("h1")?.spent).toBe("10");
    store.applyChange({ kind: "key.money", id: "h1", v: 2, json: '{"v":2,"spent":12}' });
    expect(store.key("h1")?.spent).toBe("10");
    expect(bad).toEqual(["key.money:h1"]);
  });

  it("a full load keeps a money change newer than what it read, and drops one it covers", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyAt(1));
    store.applyChange(keyMoney(5, "50"));
    let load = store.beginFullLoad();
    load.put(keyAt(3, { spent: "30" }));
    await load.finish(5, Date.now());
    expect(store.key("h1")?.spent).toBe("50");
    load = store.beginFullLoad();
    load.put(keyAt(6, { spent: "60" }));
    await load.finish(6, Date.now());
    expect(store.key("h1")?.spent).toBe("60");
    // a money change read with a load (distributed: the shard's `$<id>` field) over an older entity
    load = store.beginFullLoad();
    load.put(keyAt(6, { spent: "60" }));
    load.put(keyMoney(8, "80"));
    await load.finish(8, Date.now());
    expect(store.key("h1")?.spent).toBe("80");
    expect(store.applyChange(keyMoney(7, "70"))).toBe(false);
  });

  it("a parse kept across a full load of the same version gets the figures that load read", async () => {
    const store = new SnapshotStore();
    store.applyChange(keyAt(3, { spent: "30" }));
    const held = store.key("h1")!;
    const load = store.beginFullLoad();
    load.put(keyAt(3, { spent: "30" }));
    load.put(keyMoney(9, "90"));
    await load.finish(9, Date.now());
    expect(store.key("h1")).toBe(held); // not parsed again
    expect(held.spent).toBe("90");
  });

  it("whatever order payloads arrive in (with replays and full loads), the newest policy and figures win and neither goes back", () => {
    // A history of one key: each version either changes policy (the name says which: p<version>) or settles
    // (spent grows). Every version has an entity payload (the state as read then); a settling one also a money
    // payload. A replica receives every payload at least once, in any order, some inside full loads.
    const steps = fc.array(fc.boolean(), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(
        steps.chain((kinds) => {
          const payloads: PolicyChange[] = [];
          let policy = 0;
          let spent = 0;
          kinds.forEach((isPolicy, i) => {
            const v = i + 1;
            if (isPolicy) policy = v;
            else spent += 10;
            const state = { name: `p${policy}`, spent: String(spent) };
            payloads.push({ kind: "key", id: "h1", v, json: entityJson(v, key(state)) });
            if (!isPolicy) payloads.push(keyMoney(v, String(spent)));
          });
          const last = { policy, spent };
          return fc.tuple(
            fc.constant(last),
            fc.shuffledSubarray(payloads, { minLength: payloads.length, maxLength: payloads.length }),
            fc.array(fc.nat(payloads.length - 1), { maxLength: 6 }),
            fc.array(fc.tuple(fc.nat(payloads.length), fc.nat(payloads.length - 1)), { maxLength: 3 }),
          );
        }),
        ([last, order, replays, loads]) => {
          const store = new SnapshotStore();
          const seq = [...order, ...replays.map((i) => order[i]!)];
          let seenPolicy = -1;
          let seenSpent = -1;
          const look = () => {
            const k = store.key("h1");
            if (k === undefined) return;
            const p = Number(k.name.slice(1));
            expect(p).toBeGreaterThanOrEqual(seenPolicy);
            expect(Number(k.spent)).toBeGreaterThanOrEqual(seenSpent);
            seenPolicy = p;
            seenSpent = Number(k.spent);
          };
          seq.forEach((c, i) => {
            for (const [at, pick] of loads)
              if (at === i) {
                // a full load that read some state (any payload) while changes kept arriving
                const load = store.beginFullLoad();
                load.put(order[pick]!);
                load.abandon();
              }
            store.applyChange(c);
            look();
          });
          look();
          expect(store.key("h1")).toMatchObject({ name: `p${last.policy}`, spent: String(last.spent) });
        },
      ),
      { numRuns: 500 },
    );
  });
});
