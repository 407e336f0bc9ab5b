import { describe, expect, it } from "vitest";
import { CALM_MS, LoadPacer, MAX_PACE, TICK_MS } from "./load-pacer.ts";

describe("LoadPacer", () => {
  it("doubles the pace at each late tick, up to MAX_PACE, and halves it back to the base once calm", () => {
    const seen: number[] = [];
    let now = 1_000;
    const p = new LoadPacer(1, 2, (pace) => seen.push(pace), now);
    const tick = (late = 0) => p.tick((now += TICK_MS + late));
    tick(0.5); // within yieldMs: nothing
    expect(seen).toEqual([]);
    tick(5);
    tick(5);
    expect(seen).toEqual([2, 4]);
    for (let i = 0; i < 5; i++) tick(30);
    expect(p.current).toBe(MAX_PACE);
    expect(seen).toEqual([2, 4, 8, 16]);
    // calm: one halving per CALM_MS, never below the base
    for (let t = 0; t < CALM_MS * 6; t += TICK_MS) tick();
    expect(seen).toEqual([2, 4, 8, 16, 8, 4, 2, 1]);
    expect(p.current).toBe(1);
  });

  it("a late tick while calming starts the calm over", () => {
    let now = 0;
    const p = new LoadPacer(1, 2, () => undefined, now);
    p.tick((now += TICK_MS + 10));
    p.tick((now += TICK_MS + 10));
    expect(p.current).toBe(4);
    for (let t = 0; t < CALM_MS - TICK_MS; t += TICK_MS) p.tick((now += TICK_MS));
    p.tick((now += TICK_MS + 10));
    expect(p.current).toBe(8);
    for (let t = 0; t < CALM_MS - TICK_MS; t += TICK_MS) p.tick((now += TICK_MS));
    expect(p.current).toBe(8);
    p.tick((now += TICK_MS));
    expect(p.current).toBe(4);
  });
});
