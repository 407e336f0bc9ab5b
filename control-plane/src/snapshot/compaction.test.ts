import { describe, expect, it } from "vitest";
import { COMPACT_TOMBSTONES, compactionThreshold, compactTombstones } from "./compaction.ts";

describe("tombstone compaction threshold", () => {
  it("is the floor on a small epoch and a quarter of the entities on a large one; a floor of 0 turns it off", () => {
    expect(compactionThreshold(1_000, COMPACT_TOMBSTONES)).toBe(10_000);
    expect(compactionThreshold(1_000_000, COMPACT_TOMBSTONES)).toBe(250_000);
    expect(compactionThreshold(1_000_000, 5, 0)).toBe(5);
    expect(compactionThreshold(1_000_000, 0)).toBeNull();
  });

  it("reads MODELGATE_POLICY_COMPACT_TOMBSTONES as a whole number, refusing anything else", () => {
    expect(compactTombstones({})).toBe(COMPACT_TOMBSTONES);
    expect(compactTombstones({ MODELGATE_POLICY_COMPACT_TOMBSTONES: "500" })).toBe(500);
    expect(compactTombstones({ MODELGATE_POLICY_COMPACT_TOMBSTONES: "0" })).toBe(0);
    for (const bad of ["-1", "1.5", "lots"])
      expect(() => compactTombstones({ MODELGATE_POLICY_COMPACT_TOMBSTONES: bad })).toThrow(/whole number/);
    expect(() => compactTombstones({ MODELGATE_POLICY_COMPACT_TOMBSTONES: " 1e9x " })).toThrow(
      new Error(
        "MODELGATE_POLICY_COMPACT_TOMBSTONES must be a whole number of tombstones (0: never compact), not '1e9x'",
      ),
    );
  });
});
