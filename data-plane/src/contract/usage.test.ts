import { describe, expect, it } from "vitest";
import { usageEntryEvents } from "./usage.ts";

describe("usageEntryEvents", () => {
  it("reads a turn's events, and the older one-event entries", () => {
    expect(usageEntryEvents(["events", JSON.stringify([{ requestId: "a" }, { requestId: "b" }])])).toEqual([
      { requestId: "a" },
      { requestId: "b" },
    ]);
    expect(usageEntryEvents(["event", JSON.stringify({ requestId: "c" })])).toEqual([{ requestId: "c" }]);
    expect(usageEntryEvents(["other", "x", "events", "[]"])).toEqual([]);
  });

  it("answers null for an entry it cannot read", () => {
    expect(usageEntryEvents(["events", "{not json"])).toBeNull();
    expect(usageEntryEvents(["events", JSON.stringify({ requestId: "a" })])).toBeNull();
    expect(usageEntryEvents(["something", "else"])).toBeNull();
    expect(usageEntryEvents([])).toBeNull();
  });
});
