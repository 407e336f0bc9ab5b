import type { AccountSnapshot, ModelSnapshot, Price } from "../contract/snapshot.ts";

/** Token counts as the canonical response reports them. */
export interface TokenUsage {
  /** all prompt tokens, cached ones included */
  promptTokens: number;
  /** all completion tokens, reasoning tokens included (reasoning is billed as output) */
  completionTokens: number;
  /** the part of promptTokens served from the upstream's prompt cache */
  cachedTokens: number;
}

const MILLION = 1_000_000n;
const HALF_MILLION = 500_000n;

/**
 * The cost of one call in integer micro-units.
 *
 *   ( (prompt − cached) × input + cached × (cachedInput ?? input) + completion × output ) / 1,000,000
 *
 * Prices are micro-units per one million tokens, so the sum is in millionths of a micro-unit. It is divided
 * once, at the end, rounding half up (towards +∞: x.5 → x+1, −x.5 → −x): per-part rounding would let many small
 * parts drift by up to 1.5 micro-units per call. BigInt because tokens × price can pass 2^53 (a 1M-token prompt
 * at 10^10 micro-units/M is already 10^16).
 *
 * cachedTokens larger than promptTokens (a miscounting upstream) is clamped to promptTokens, so a call never
 * bills negative uncached tokens. Token counts must be non-negative integers.
 */
export function computeCost(usage: TokenUsage, price: Price): bigint {
  const prompt = BigInt(usage.promptTokens);
  const cachedRaw = BigInt(usage.cachedTokens);
  const cached = cachedRaw > prompt ? prompt : cachedRaw;
  const input = BigInt(price.input);
  const cachedInput = price.cachedInput === null ? input : BigInt(price.cachedInput);
  const total =
    (prompt - cached) * input + cached * cachedInput + BigInt(usage.completionTokens) * BigInt(price.output);
  return floorDiv(total + HALF_MILLION, MILLION);
}

// BigInt division truncates towards zero; rounding half up needs the floor for negative sums (negative prices
// are representable in the contract, e.g. a rebate).
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

/** The price the account pays for the model: its contract price when it has one, else the list price. */
export function pickPrice(account: AccountSnapshot, model: ModelSnapshot): Price {
  return account.contracts[model.id] ?? model.price;
}
