import { describe, expect, it, vi } from "vitest";
import { TurnBatcher } from "./turn-batcher.ts";
import { atTurnEnd } from "./write-batch.ts";

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe("TurnBatcher", () => {
  it("sends each group once per turn, with its items in order", async () => {
    const sent: [string, number[]][] = [];
    const b = new TurnBatcher<number>(async (group, items) => void sent.push([group, items]));
    const all = [b.add("a", 1), b.add("b", 2), b.add("a", 3)];
    await Promise.resolve();
    expect(sent).toEqual([]); // nothing before the turn ends
    await Promise.all(all);
    expect(sent).toEqual([
      ["a", [1, 3]],
      ["b", [2]],
    ]);
    await b.add("a", 4);
    expect(sent.at(-1)).toEqual(["a", [4]]);
  });

  it("gives every add of a group its send's failure", async () => {
    const b = new TurnBatcher<number>(async (group) => {
      if (group === "bad") throw new Error("redis down");
    });
    const results = await Promise.allSettled([b.add("bad", 1), b.add("bad", 2), b.add("good", 3)]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "fulfilled"]);
  });

  it("flush sends at once and the turn's end then has nothing left", async () => {
    let sends = 0;
    const b = new TurnBatcher<number>(async () => void sends++);
    void b.add("a", 1);
    await b.flush();
    expect(sends).toBe(1);
    await nextTurn();
    expect(sends).toBe(1);
  });

  it("with a window, sends what several turns added once, when the window ends, or at once on flush", async () => {
    // The window's clock is faked (turns still end in real setImmediate): the test moves time instead of sleeping.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const sent: [string, number[]][] = [];
      const b = new TurnBatcher<number>(async (group, items) => void sent.push([group, items]), { windowMs: 40 });
      const first = b.add("a", 1);
      await nextTurn();
      const second = b.add("a", 2);
      await nextTurn();
      await vi.advanceTimersByTimeAsync(39);
      expect(sent).toEqual([]); // turns ended, the window has not
      await vi.advanceTimersByTimeAsync(1);
      await Promise.all([first, second]);
      expect(sent).toEqual([["a", [1, 2]]]);
      const third = b.add("a", 3);
      await b.flush();
      await third;
      expect(sent.at(-1)).toEqual(["a", [3]]);
      await vi.advanceTimersByTimeAsync(100);
      expect(sent.length).toBe(2); // the flushed window sends nothing more
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("runs work deferred during the turn's end in the next turn", async () => {
    const order: string[] = [];
    atTurnEnd(() => {
      order.push("first");
      atTurnEnd(() => order.push("second"));
    });
    await nextTurn();
    expect(order).toEqual(["first"]);
    await nextTurn();
    expect(order).toEqual(["first", "second"]);
  });
});
