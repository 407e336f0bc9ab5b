import { describe, expect, it } from "vitest";
import { formatAmount, parseAmount } from "./money.ts";

describe("money", () => {
  it("parses decimal text exactly", () => {
    expect(parseAmount("12.5")).toBe(12_500_000n);
    expect(parseAmount("0.000001")).toBe(1n);
    expect(parseAmount("100")).toBe(100_000_000n);
    expect(parseAmount(0.15)).toBe(150_000n);
    expect(parseAmount(0.3)).toBe(300_000n);
    expect(parseAmount("-2.25")).toBe(-2_250_000n);
    expect(parseAmount("9007199254740993")).toBe(9_007_199_254_740_993_000_000n);
  });
  it("refuses what is not an amount", () => {
    expect(() => parseAmount("1.0000001")).toThrow(/6 decimals/);
    expect(() => parseAmount("abc")).toThrow(/not an amount/);
    expect(() => parseAmount("1e3x")).toThrow();
  });
  it("formats micro-units", () => {
    expect(formatAmount(12_500_000n)).toBe("12.5");
    expect(formatAmount(1n)).toBe("0.000001");
    expect(formatAmount(-2_250_000n)).toBe("-2.25");
    expect(formatAmount(0n)).toBe("0");
  });
});
