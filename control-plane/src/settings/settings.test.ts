import { describe, expect, it } from "vitest";
import { settleIntervalMs } from "./settings.ts";

describe("settlement interval", () => {
  it("reads MODELGATE_SETTLE_INTERVAL_MS as whole milliseconds from 0 to 60,000, refusing anything else", () => {
    expect(settleIntervalMs({})).toBe(1_000);
    expect(settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: " " })).toBe(1_000);
    // 0 is documented (docs/configuration.md): each shard settles whatever a read brings, with no wait between.
    expect(settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: "0" })).toBe(0);
    expect(settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: "100" })).toBe(100);
    expect(settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: "60000" })).toBe(60_000);
    for (const bad of ["-1", "1.5", "1e3", "0x10", "NaN", "Infinity", "soon", "60001", "9007199254740993"])
      expect(() => settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: bad }), bad).toThrow(
        /^MODELGATE_SETTLE_INTERVAL_MS must be a whole number of ms, from 0 to 60000, not '/,
      );
    expect(() => settleIntervalMs({ MODELGATE_SETTLE_INTERVAL_MS: "-1" })).toThrow(
      new Error("MODELGATE_SETTLE_INTERVAL_MS must be a whole number of ms, from 0 to 60000, not '-1'"),
    );
  });
});
