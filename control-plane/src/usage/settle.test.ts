import { describe, expect, it } from "vitest";
import { timeOrderedId } from "./usage-rows.ts";

describe("timeOrderedId", () => {
  it("is a version 7 UUID whose first 48 bits are the milliseconds, so later ids sort after earlier ones", () => {
    const t = Date.UTC(2026, 10, 25, 15, 30);
    const id = timeOrderedId(t);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(t);
    const later = timeOrderedId(t + 1);
    expect(later > id).toBe(true);
    // the rest is random: ids made in the same millisecond differ
    const same = new Set(Array.from({ length: 1000 }, () => timeOrderedId(t)));
    expect(same.size).toBe(1000);
  });
});
