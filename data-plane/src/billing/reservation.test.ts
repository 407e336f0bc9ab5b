import { describe, expect, it } from "vitest";
import {
  DEFAULT_RESERVED_OUTPUT_TOKENS,
  maxOutputTokensOf,
  overReserve,
  refusedSpend,
  reservationEstimate,
} from "./reservation.ts";

describe("reservationEstimate", () => {
  const price = { input: "1000000", output: "16000000", cachedInput: null };

  it("prices the prompt estimate at its dearest class and the output cap at output, rounded up", () => {
    // 25 × 2 (1-hour cache writes: 2 × input by default) + 1000 × 16 micro
    expect(reservationEstimate(price, 25, 1000)).toBe(16_050n);
    // 1 token at 1 micro per 1M: a millionth of a micro-unit still holds one
    expect(reservationEstimate({ input: "1", output: "0", cachedInput: null }, 1, 0)).toBe(1n);
  });

  it("reserves DEFAULT_RESERVED_OUTPUT_TOKENS when the request names no cap", () => {
    expect(reservationEstimate(price, 0, undefined)).toBe(BigInt(DEFAULT_RESERVED_OUTPUT_TOKENS) * 16n);
  });

  it("takes the prompt at the dearest input class (1-hour cache writes: 2 × input by default)", () => {
    expect(reservationEstimate(price, 100, 0)).toBe(200n);
    expect(reservationEstimate({ ...price, cacheWrite1h: "500000", cacheWrite5m: "3000000" }, 100, 0)).toBe(300n);
  });

  it("holds nothing for a free model", () => {
    expect(reservationEstimate({ input: "0", output: "0", cachedInput: null }, 1000, 1000)).toBe(0n);
  });
});

describe("maxOutputTokensOf", () => {
  it("reads each protocol's output cap", () => {
    expect(maxOutputTokensOf({ max_tokens: 50 })).toBe(50);
    expect(maxOutputTokensOf({ max_completion_tokens: 70, max_tokens: 50 })).toBe(70);
    expect(maxOutputTokensOf({ max_output_tokens: 90 })).toBe(90);
    expect(maxOutputTokensOf({ generationConfig: { maxOutputTokens: 30 } })).toBe(30);
  });

  it("takes anything but a positive integer as no cap", () => {
    for (const v of [0, -1, 1.5, "100", null, 1e300]) expect(maxOutputTokensOf({ max_tokens: v })).toBeUndefined();
    expect(maxOutputTokensOf({ generationConfig: "x" })).toBeUndefined();
  });
});

describe("the reservation rule", () => {
  it("admits what fits beside the holds, or anything while nothing is held and something is left", () => {
    expect(overReserve(0n, 600n, 400n, 1000n)).toBe(false);
    expect(overReserve(0n, 600n, 401n, 1000n)).toBe(true);
    expect(overReserve(999n, 0n, 5000n, 1000n)).toBe(false);
    expect(overReserve(1000n, 0n, 1n, 1000n)).toBe(true);
    expect(overReserve(10n ** 18n, 10n ** 18n, 1n, null)).toBe(false);
  });

  it("gives checkKeyPolicy a spend that exhausts the room exactly when the rule refuses", () => {
    // refused at u + r + est > room, i.e. settled + (u + r + est − 1) ≥ limit with room = limit − settled
    expect(refusedSpend(0n, 600n, 401n)).toBe(1000n);
    expect(refusedSpend(1000n, 0n, 1n)).toBe(1000n);
  });
});
