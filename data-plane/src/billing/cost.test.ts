import { describe, expect, it } from "vitest";
import type { AccountSnapshot, ModelSnapshot, Price } from "../contract/snapshot.ts";
import { computeCost, pickPrice, tokenBreakdown, unitPrices } from "./cost.ts";

const price = (input: string, output: string, cachedInput: string | null = null): Price => ({
  input,
  output,
  cachedInput,
});
const usage = (promptTokens: number, completionTokens: number, cachedTokens = 0) => ({
  promptTokens,
  completionTokens,
  cachedTokens,
});

describe("computeCost", () => {
  it("bills input and output at micro-units per million tokens", () => {
    // $2.50 / $10.00 per 1M tokens = 2_500_000 / 10_000_000 micro-units per 1M
    expect(computeCost(usage(1_000_000, 1_000_000), price("2500000", "10000000"))).toBe(12_500_000n);
    expect(computeCost(usage(1000, 500), price("2500000", "10000000"))).toBe(7_500n);
  });

  it("is zero for no tokens and for free models", () => {
    expect(computeCost(usage(0, 0), price("2500000", "10000000"))).toBe(0n);
    expect(computeCost(usage(123_456, 7_890), price("0", "0", "0"))).toBe(0n);
  });

  it("bills cached tokens at the cached price, the rest of the prompt at the input price", () => {
    // 600 uncached × 3_000_000 + 400 cached × 300_000 + 100 × 15_000_000 = 1.8e9 + 1.2e8 + 1.5e9 = 3.42e9 → 3420
    expect(computeCost(usage(1000, 100, 400), price("3000000", "15000000", "300000"))).toBe(3_420n);
  });

  it("bills cached tokens at the input price when the cached price is null", () => {
    expect(computeCost(usage(1000, 0, 400), price("3000000", "15000000", null))).toBe(3_000n);
    expect(computeCost(usage(1000, 0, 400), price("3000000", "15000000", "0"))).toBe(1_800n);
  });

  it("clamps cached tokens to the prompt tokens", () => {
    expect(computeCost(usage(100, 0, 250), price("1000000", "0", "500000"))).toBe(50n);
  });

  it("rounds the total once, half up", () => {
    // 1 token at 1_499_999 per M = 1.499999 → 1; at 1_500_000 → 1.5 → 2; at 2_500_000 → 2.5 → 3
    expect(computeCost(usage(1, 0), price("1499999", "0"))).toBe(1n);
    expect(computeCost(usage(1, 0), price("1500000", "0"))).toBe(2n);
    expect(computeCost(usage(1, 0), price("2500000", "0"))).toBe(3n);
    expect(computeCost(usage(1, 0), price("499999", "0"))).toBe(0n);
    expect(computeCost(usage(1, 0), price("500000", "0"))).toBe(1n);
    // parts of 0.4 each would round to 0 separately; together 0.8 → 1
    expect(computeCost(usage(1, 1), price("400000", "400000"))).toBe(1n);
  });

  it("rounds negative totals half up too (towards +∞)", () => {
    expect(computeCost(usage(1, 0), price("-1500000", "0"))).toBe(-1n);
    expect(computeCost(usage(1, 0), price("-1500001", "0"))).toBe(-2n);
    expect(computeCost(usage(1, 0), price("-500000", "0"))).toBe(0n);
    expect(computeCost(usage(3, 0), price("-1000000", "0"))).toBe(-3n);
  });

  it("stays exact beyond 2^53", () => {
    // 2^31 tokens each way at 10^12 micro-units per M: (2^31 × 10^12 × 2) / 10^6 = 4_294_967_296_000_000
    const n = 2 ** 31;
    expect(computeCost(usage(n, n), price("1000000000000", "1000000000000"))).toBe(4_294_967_296_000_000n);
    // MAX_SAFE_INTEGER tokens at 999_999 per M: 9007199254740991 × 999999 / 1e6 = 9007190247541736.259… → …736
    expect(computeCost(usage(Number.MAX_SAFE_INTEGER, 0), price("999999", "0"))).toBe(9_007_190_247_541_736n);
    // prices above 2^63 are fine too
    expect(computeCost(usage(1_000_000, 0), price("99999999999999999999999", "0"))).toBe(
      99_999_999_999_999_999_999_999n,
    );
  });

  it("bills cache writes at 1.25 × input (5 minutes) and 2 × input (1 hour) when the price has none", () => {
    const p = price("3000000", "15000000", "300000");
    // 100 input × 3 + 200 writes 5m × 3.75 + 300 writes 1h × 6 + 400 reads × 0.3 = 300 + 750 + 1800 + 120 → 2970
    const u = {
      promptTokens: 1000,
      completionTokens: 0,
      cachedTokens: 400,
      cacheWrite5mTokens: 200,
      cacheWrite1hTokens: 300,
    };
    expect(computeCost(u, p)).toBe(2_970n);
    // explicit cache-write prices win, an explicit 0 included
    expect(computeCost(u, { ...p, cacheWrite5m: "0", cacheWrite1h: "1000000" })).toBe(300n + 0n + 300n + 120n);
  });

  it("keeps the derived 1.25 × price exact and rounds once", () => {
    // 1 micro per 1M input: a 5-minute write costs 1.25 micro per 1M tokens. 400,000 writes → 0.5 → 1;
    // rounding the price to 1 first would give 0.4 → 0.
    expect(
      computeCost(
        { promptTokens: 400_000, completionTokens: 0, cachedTokens: 0, cacheWrite5mTokens: 400_000 },
        price("1", "0"),
      ),
    ).toBe(1n);
    expect(
      computeCost(
        { promptTokens: 399_999, completionTokens: 0, cachedTokens: 0, cacheWrite5mTokens: 399_999 },
        price("1", "0"),
      ),
    ).toBe(0n);
    expect(unitPrices(price("1", "7", null))).toEqual({
      input: "1",
      cachedInput: "1",
      cacheWrite5m: "1.25",
      cacheWrite1h: "2",
      output: "7",
    });
    expect(unitPrices({ ...price("3", "7", "1"), cacheWrite5m: "5" })).toEqual({
      input: "3",
      cachedInput: "1",
      cacheWrite5m: "5",
      cacheWrite1h: "6",
      output: "7",
    });
    expect(unitPrices(price("-3", "0")).cacheWrite5m).toBe("-3.75");
  });

  it("splits the prompt into classes that add up to it, clamping a miscounting upstream", () => {
    expect(
      tokenBreakdown({
        promptTokens: 100,
        completionTokens: 9,
        cachedTokens: 10,
        cacheWrite5mTokens: 20,
        cacheWrite1hTokens: 30,
        reasoningTokens: 4,
      }),
    ).toEqual({
      input: 40,
      cacheRead: 10,
      cacheWrite5m: 20,
      cacheWrite1h: 30,
      output: 9,
      reasoning: 4,
    });
    expect(
      tokenBreakdown({
        promptTokens: 50,
        completionTokens: 0,
        cachedTokens: 30,
        cacheWrite5mTokens: 30,
        cacheWrite1hTokens: 30,
      }),
    ).toEqual({
      input: 0,
      cacheRead: 30,
      cacheWrite5m: 20,
      cacheWrite1h: 0,
      output: 0,
      reasoning: 0,
    });
  });

  it("bills completion tokens (reasoning already included) at the output price", () => {
    expect(computeCost(usage(10, 2_000), price("1000000", "4000000"))).toBe(8_010n);
  });
});

describe("pickPrice", () => {
  const model: ModelSnapshot = {
    id: "acme-chat-2025-01-01",
    displayName: null,
    reasoning: false,
    price: price("1000000", "2000000"),
    routes: [],
    createdAt: "2025-01-01T00:00:00.000Z",
  };
  const account = (contracts: AccountSnapshot["contracts"]): AccountSnapshot => ({
    id: "a1",
    name: "Acme",
    status: "active",
    balance: "0",
    limits: { rpm: null, tpm: null, concurrency: null },
    contracts,
  });

  it("uses the contract price when the account has one", () => {
    const contract = price("500000", "900000", "100000");
    expect(pickPrice(account({ "acme-chat-2025-01-01": contract }), model)).toBe(contract);
  });

  it("falls back to the list price", () => {
    expect(pickPrice(account({ "other-model-2025-01-01": price("1", "1") }), model)).toBe(model.price);
    expect(pickPrice(account({}), model)).toBe(model.price);
  });
});
