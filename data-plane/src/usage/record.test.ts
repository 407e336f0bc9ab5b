import { describe, expect, it } from "vitest";
import { costOf, usageEvent } from "./record.ts";

const price = { input: "150000", output: "600000", cachedInput: "75000" };
const u = (promptTokens: number, completionTokens: number, cachedTokens = 0, reasoningTokens = 0) => ({ promptTokens, completionTokens, cachedTokens, reasoningTokens });

describe("costOf", () => {
  it("charges prompt × input + completion × output, per million tokens", () => {
    // 1M prompt at 0.15 + 1M completion at 0.60 = 0.75 units = 750000 micro
    expect(costOf(u(1_000_000, 1_000_000), price)).toBe(750_000n);
    // 10 × 150000 + 20 × 600000 = 13_500_000 / 1e6 = 13.5 → 14 (half up)
    expect(costOf(u(10, 20), price)).toBe(14n);
    expect(costOf(u(1, 0), price)).toBe(0n); // 0.15 micro rounds to 0
    expect(costOf(u(0, 0), price)).toBe(0n);
  });
  it("bills cached prompt tokens at the cached price, and at the input price when none is set", () => {
    expect(costOf(u(1_000_000, 0, 400_000), price)).toBe(90_000n + 30_000n);
    expect(costOf(u(1_000_000, 0, 400_000), { ...price, cachedInput: null })).toBe(150_000n);
  });
  it("stays exact beyond 2^53", () => {
    expect(costOf(u(2_000_000_000, 0), { input: "9007199254740993", output: "0", cachedInput: null })).toBe(18_014_398_509_481_986_000n);
  });
});

describe("usageEvent", () => {
  const call = { requestId: "r", keyId: "k", accountId: "a", model: "m", protocol: "openai" as const, upstream: "up", stream: false, clientIp: null, startedAt: Date.now() - 5, firstByteAt: null };
  it("never charges a failed call", () => {
    expect(usageEvent(call, u(1000, 1000), price, 502, "upstream_error").cost).toBe("0");
    expect(usageEvent(call, u(1000, 1000), price, 200, null).cost).toBe("750");
  });
});
