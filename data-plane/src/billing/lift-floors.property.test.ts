import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LiftFloors } from "./lift-floors.ts";

const AFTER = 10_000;

/** A run of batches' settled figures for one counter: mostly rising, now and then lower (a reset, an older snapshot). */
const runs = fc.array(
  fc.record({
    gap: fc.integer({ min: 0, max: 8_000 }),
    rise: fc.bigInt({ min: 0n, max: 500n }),
    drop: fc.option(fc.bigInt({ min: 1n, max: 2_000n }), { freq: 8 }),
  }),
  { minLength: 1, maxLength: 60 },
);

describe("LiftFloors", () => {
  it("lifts only to a figure seen at least the delay ago, never above this batch's nor any figure seen since", () => {
    fc.assert(
      fc.property(runs, (steps) => {
        const floors = new LiftFloors(AFTER);
        const seen: { figure: bigint; at: number }[] = [];
        let now = 1_000_000;
        let figure = 1_000n;
        for (const s of steps) {
          now += s.gap;
          figure = s.drop === null ? figure + s.rise : figure > s.drop ? figure - s.drop : 0n;
          seen.push({ figure, at: now });
          const floor = floors.floor("k", figure, now);
          expect(floors.kept("k")).toBeLessThanOrEqual(3);
          if (floor === null) continue;
          expect(floor).toBeLessThanOrEqual(figure);
          // a figure some batch carried at least the delay ago …
          const first = seen.findIndex((o) => o.figure === floor && now - o.at >= AFTER);
          expect(first).toBeGreaterThanOrEqual(0);
          // … and no batch since carried a lower one (it would have held spend the lift would count twice)
          const recorded = seen.findLastIndex((o) => o.figure === floor && now - o.at >= AFTER);
          for (const o of seen.slice(recorded)) expect(floor).toBeLessThanOrEqual(o.figure);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("lifts to a figure that stood for one and a half delays (and two batches' gaps), whatever came before", () => {
    fc.assert(
      fc.property(runs, fc.integer({ min: 1, max: 5_000 }), (before, every) => {
        const floors = new LiftFloors(AFTER);
        let now = 1_000_000;
        let figure = 1_000n;
        for (const s of before) {
          now += s.gap;
          figure = s.drop === null ? figure + s.rise : figure > s.drop ? figure - s.drop : 0n;
          floors.floor("k", figure, now);
        }
        // a new figure, then the same one on every batch, `every` ms apart: recorded within half a delay (and a
        // gap) of the figure recorded before it, ripe a delay later, seen by the next batch after that
        const standing = figure + 7n;
        const from = now + 1;
        let floor: bigint | null = null;
        for (now = from; now <= from + 1.5 * AFTER + 2 * every; now += every) floor = floors.floor("k", standing, now);
        expect(floor).toBe(standing);
      }),
      { numRuns: 300 },
    );
  });

  it("lifts at once with no delay, and forgets a counter's figures", () => {
    expect(new LiftFloors(0).floor("k", 42n, 0)).toBe(42n);
    const floors = new LiftFloors(AFTER);
    expect(floors.floor("k", 100n, 0)).toBeNull();
    expect(floors.floor("k", 100n, AFTER)).toBe(100n);
    floors.forget("k");
    expect(floors.kept("k")).toBe(0);
    expect(floors.floor("k", 100n, AFTER + 1)).toBeNull();
  });
});
