import { describe, expect, it } from "vitest";
import { singleFlight } from "./single-flight.ts";

describe("singleFlight", () => {
  it("runs one at a time, and once more for any number of calls during a run", async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const run = singleFlight(async () => {
      runs++;
      await new Promise<void>((r) => (release = r));
    });
    const first = run();
    const during = [run(), run(), run()];
    expect(runs).toBe(1);
    expect(during.every((p) => p === first)).toBe(true);
    release();
    await new Promise((r) => setImmediate(r));
    expect(runs).toBe(2); // once more, not three times
    release();
    await first;
    expect(runs).toBe(2);
    // a call after the runs ended starts a new one
    const next = run();
    expect(runs).toBe(3);
    release();
    await next;
  });

  it("asks `more` before a repeat", async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const run = singleFlight(
      async () => {
        runs++;
        await new Promise<void>((r) => (release = r));
      },
      () => false,
    );
    const p = run();
    void run();
    release();
    await p;
    expect(runs).toBe(1);
  });
});
