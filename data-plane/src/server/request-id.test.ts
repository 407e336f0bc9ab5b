import { describe, expect, it } from "vitest";
import { newRequestId } from "./request-id.ts";

describe("newRequestId", () => {
  it("is req_ and 24 hex characters, the first 10 the millisecond's low 40 bits", () => {
    const now = Date.UTC(2026, 10, 28, 16, 30, 0, 123);
    const id = newRequestId(now);
    expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(parseInt(id.slice(4, 14), 16)).toBe(now % 2 ** 40);
  });

  it("sorts by the time it was made, whatever the random part", () => {
    const t = Date.UTC(2026, 10, 28, 16, 30, 0, 0);
    const ids: string[] = [];
    for (let ms = 0; ms < 50; ms++) for (let k = 0; k < 20; k++) ids.push(newRequestId(t + ms));
    const sorted = [...ids].sort();
    // each millisecond's ids come before the next millisecond's (within one, the random part orders them)
    for (let i = 0; i < sorted.length; i++)
      expect(parseInt(sorted[i]!.slice(4, 14), 16)).toBe((t + Math.floor(i / 20)) % 2 ** 40);
  });

  it("draws fresh random bits for every id, also within one millisecond and across the pool's refills", () => {
    const now = Date.now();
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(newRequestId(now));
    expect(seen.size).toBe(20_000);
    const tails = new Set([...seen].map((id) => id.slice(14)));
    expect(tails.size).toBe(20_000);
  });
});
