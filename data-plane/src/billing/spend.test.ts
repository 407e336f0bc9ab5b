import { describe, expect, it } from "vitest";
import { afterAdd, MemorySpendCounter, unsettled } from "./spend.ts";
import { makeAccount, makeKey, spendCounterContract } from "./spend.suite.ts";

spendCounterContract("memory", async () => {
  const counter = new MemorySpendCounter();
  return { counter, cleanup: () => counter.close() };
});

describe("spend arithmetic", () => {
  it("computes unsettled spend as counter − settled, floored at 0, and 0 without a settled figure", () => {
    expect([unsettled(10n, 3n), unsettled(3n, 10n), unsettled(5n, 5n), unsettled(99n, null)]).toEqual([7n, 0n, 0n, 0n]);
  });

  it("lifts a counter to the settled figure before adding", () => {
    expect([afterAdd(10n, 3n, 1n), afterAdd(3n, 10n, 1n), afterAdd(3n, null, 1n)]).toEqual([11n, 11n, 4n]);
  });

  it("answers synchronously in memory: an add is visible to the next get without awaiting anything", () => {
    const a = makeAccount();
    const k = makeKey(a.id);
    const counter = new MemorySpendCounter();
    void counter.add(k, a, 5n); // not awaited: the in-memory counter applies it at once
    expect(counter.get(k, a)).toEqual({ keySpent: 5n, accountSpent: 5n });
  });
});
