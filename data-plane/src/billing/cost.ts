import type { AccountSnapshot, ModelSnapshot, Price } from "../contract/snapshot.ts";

/** Token counts as the canonical response reports them (see protocols/canonical.ts, Usage). */
export interface TokenUsage {
  /** all prompt tokens, cache reads and writes included */
  promptTokens: number;
  /** all completion tokens, reasoning tokens included (reasoning is billed as output) */
  completionTokens: number;
  /** the part of promptTokens served from the upstream's prompt cache */
  cachedTokens: number;
  /** the part of promptTokens written to a 5-minute prompt cache */
  cacheWrite5mTokens?: number;
  /** the part of promptTokens written to a 1-hour prompt cache */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
}

/** The billed breakdown of a call: every token in exactly one input class, or in output. */
export interface TokenBreakdown {
  /** input tokens neither read from nor written to a cache */
  input: number;
  cacheRead: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  /** all output tokens, reasoning included */
  output: number;
  /** the part of output spent on reasoning (informative; billed within output) */
  reasoning: number;
}

/**
 * Splits the canonical counts into the billed classes. A miscounting upstream (cache counts above the prompt)
 * is clamped in the order reads, 5-minute writes, 1-hour writes, so the classes always sum to promptTokens:
 * nothing is billed twice and no class goes negative.
 */
export function tokenBreakdown(u: TokenUsage): TokenBreakdown {
  let left = u.promptTokens;
  const take = (n: number | undefined): number => {
    const t = Math.min(Math.max(0, n ?? 0), left);
    left -= t;
    return t;
  };
  const cacheRead = take(u.cachedTokens);
  const cacheWrite5m = take(u.cacheWrite5mTokens);
  const cacheWrite1h = take(u.cacheWrite1hTokens);
  return {
    input: left,
    cacheRead,
    cacheWrite5m,
    cacheWrite1h,
    output: u.completionTokens,
    reasoning: Math.min(u.reasoningTokens ?? 0, u.completionTokens),
  };
}

/**
 * The price of each class in quarter micro-units per one million tokens. Quarters, because the default
 * 5-minute cache-write price is 1.25 × input: kept exact here, the call is rounded once, at the end.
 */
export interface QuarterPrices {
  input: bigint;
  cachedInput: bigint;
  cacheWrite5m: bigint;
  cacheWrite1h: bigint;
  output: bigint;
}

/**
 * Resolves a price's classes, applying the documented defaults: cache reads at the input price when
 * cachedInput is null, 5-minute cache writes at 1.25 × input and 1-hour writes at 2 × input when theirs are absent.
 */
export function quarterPrices(price: Price): QuarterPrices {
  let q = quarterMemo.get(price);
  if (q === undefined) quarterMemo.set(price, (q = resolveQuarterPrices(price)));
  return q;
}

// Every call is priced, mostly at the few prices of the snapshot's models: each price object's BigInts and
// texts are worked out once (snapshot objects are not modified; a new snapshot brings new objects).
const quarterMemo = new WeakMap<Price, QuarterPrices>();
const unitMemo = new WeakMap<Price, UnitPrices>();

function resolveQuarterPrices(price: Price): QuarterPrices {
  const input = BigInt(price.input) * 4n;
  const given = (p: string | null | undefined): bigint | null =>
    p === null || p === undefined ? null : BigInt(p) * 4n;
  return {
    input,
    cachedInput: given(price.cachedInput) ?? input,
    cacheWrite5m: given(price.cacheWrite5m) ?? BigInt(price.input) * 5n,
    cacheWrite1h: given(price.cacheWrite1h) ?? BigInt(price.input) * 8n,
    output: BigInt(price.output) * 4n,
  };
}

/** Unit prices as stored on a usage row: micro-units per one million tokens, exact decimal text ("3750000.25"). */
export interface UnitPrices {
  input: string;
  cachedInput: string;
  cacheWrite5m: string;
  cacheWrite1h: string;
  output: string;
}

const quarterText = (q: bigint): string => {
  const neg = q < 0n;
  const a = neg ? -q : q;
  const frac = ["", ".25", ".5", ".75"][Number(a % 4n)];
  return `${neg ? "-" : ""}${a / 4n}${frac}`;
};

/** The same object for the same price (shared by usage events: not to be modified). */
export function unitPrices(price: Price): UnitPrices {
  let u = unitMemo.get(price);
  if (u === undefined) unitMemo.set(price, (u = resolveUnitPrices(price)));
  return u;
}

function resolveUnitPrices(price: Price): UnitPrices {
  const q = quarterPrices(price);
  return {
    input: quarterText(q.input),
    cachedInput: quarterText(q.cachedInput),
    cacheWrite5m: quarterText(q.cacheWrite5m),
    cacheWrite1h: quarterText(q.cacheWrite1h),
    output: quarterText(q.output),
  };
}

const QUARTER_MILLION = 4_000_000n;
const HALF = 2_000_000n;

/**
 * The cost of one call in integer micro-units:
 *
 *   ( input × inputPrice + cacheRead × cachedInputPrice + cacheWrite5m × cacheWrite5mPrice
 *     + cacheWrite1h × cacheWrite1hPrice + output × outputPrice ) / 1,000,000
 *
 * Prices are micro-units per one million tokens, carried in quarters (see QuarterPrices), so the sum is in
 * quarter-millionths of a micro-unit. It is divided once, at the end, rounding half up (towards +∞: x.5 → x+1,
 * −x.5 → −x): per-part rounding would let many small parts drift by up to 2.5 micro-units per call. BigInt
 * because tokens × price can pass 2^53 (a 1M-token prompt at 10^10 micro-units/M is already 10^16).
 * Token counts must be non-negative integers.
 */
export function computeCost(usage: TokenUsage, price: Price): bigint {
  const b = tokenBreakdown(usage);
  const q = quarterPrices(price);
  const total =
    BigInt(b.input) * q.input +
    BigInt(b.cacheRead) * q.cachedInput +
    BigInt(b.cacheWrite5m) * q.cacheWrite5m +
    BigInt(b.cacheWrite1h) * q.cacheWrite1h +
    BigInt(b.output) * q.output;
  return floorDiv(total + HALF, QUARTER_MILLION);
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
