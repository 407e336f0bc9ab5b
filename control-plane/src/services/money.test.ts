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
    // beyond 2^53, exactly (no float on the way)
    expect(parseAmount("900719925474.099312")).toBe(900_719_925_474_099_312n);
    expect(parseAmount("1000000000000")).toBe(10n ** 18n);
  });
  it("refuses amounts a BIGINT column could not hold with room for sums", () => {
    expect(() => parseAmount("1000000000000.000001")).toThrow(/out of range/);
    expect(() => parseAmount("99999999999999999999")).toThrow(/out of range/);
    expect(() => parseAmount("-99999999999999999999")).toThrow(/out of range/);
    expect(() => parseAmount("1".repeat(1000))).toThrow(/not an amount/);
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
