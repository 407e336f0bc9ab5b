import type { AccountSnapshot, KeySnapshot, Price } from "../contract/snapshot.ts";
import type { BudgetCalendar } from "./periods.ts";
import { budgetRoom } from "../policy/budget.ts";
import { balanceOf, compileKey, type UnsettledSpend } from "../policy/check.ts";
import { quarterPrices } from "./cost.ts";

// Reservations: a call's cost is known only when it ends, so each admitted call holds an estimate of it
// against its key's and its account's money until it ends; parallel calls then see each other. Without them
// N parallel calls all saw the same remainder and together overran a quota or balance by N calls.
//
// The rule, per subject (the key: its quota and budgets; the account: its balance and budgets), with u the
// unsettled spend, r what the calls in flight hold and e this call's estimate:
//   - admitted when u + r + e fits the room the snapshot leaves (limit − settled spend), or
//   - when nothing is held (r = 0) and anything is left (u < room): a call alone may still go over, so a call
//     whose estimate is larger than the remainder is not refused for good, only while others are in flight.
// So a burst overruns a limit by at most one call's cost (the call that went alone) plus what calls cost
// beyond their estimates; a call on its own is admitted exactly as before (while anything is left).

/**
 * Output tokens reserved for a call that names no maximum (max_tokens, max_output_tokens, maxOutputTokens):
 * its output is unbounded, so it is reserved as this much and a longer answer is an overrun beyond estimate.
 */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 4096;

/**
 * The output cap a request body names, whatever its protocol: OpenAI max_completion_tokens (else max_tokens),
 * Anthropic max_tokens, Responses max_output_tokens, Gemini generationConfig.maxOutputTokens. Read from the
 * raw body because a body passed through to its own protocol's upstream is not parsed further; a value that
 * is not a positive integer counts as absent (the upstream refuses it, and the call costs nothing).
 */
export function maxOutputTokensOf(body: Record<string, unknown>): number | undefined {
  const g = body.generationConfig;
  const gemini = typeof g === "object" && g !== null ? (g as Record<string, unknown>).maxOutputTokens : undefined;
  for (const v of [body.max_completion_tokens, body.max_tokens, body.max_output_tokens, gemini])
    if (typeof v === "number" && Number.isSafeInteger(v) && v > 0) return v;
  return undefined;
}

/**
 * The estimate a call reserves, in micro-units, rounded up: the prompt's estimated tokens at the dearest input
 * class (a prompt may be written to a cache, dearer than input) plus the maximum output at the output price.
 */
export function reservationEstimate(price: Price, promptTokens: number, maxOutputTokens: number | undefined): bigint {
  const q = quarterPrices(price);
  let inQ = q.input;
  for (const c of [q.cachedInput, q.cacheWrite5m, q.cacheWrite1h]) if (c > inQ) inQ = c;
  const out = maxOutputTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
  const total = BigInt(Math.max(0, promptTokens)) * inQ + BigInt(Math.max(0, out)) * q.output;
  if (total <= 0n) return 0n; // free (or rebated) models hold nothing
  return (total + 3_999_999n) / 4_000_000n;
}

/** Money left under each subject's tightest limit beyond its settled spend; null: the subject has no limit. */
export interface Rooms {
  key: bigint | null;
  account: bigint | null;
}

/** The rooms checkKeyPolicy enforces: the key's quota and budgets; the account's balance and budgets. */
export function moneyRooms(key: KeySnapshot, account: AccountSnapshot, calendar: BudgetCalendar): Rooms {
  const c = compileKey(key);
  return {
    key: min(c.quota === null ? null : c.quota - c.spent, budgetRoom(key.budgets, calendar)),
    account: min(balanceOf(account), budgetRoom(account.budgets, calendar)),
  };
}

const min = (a: bigint | null, b: bigint | null): bigint | null => (a === null ? b : b === null || a < b ? a : b);

/** A call's hold on its key's and account's money, from admission until settle(). */
export class Reservation {
  private ended = false;
  constructor(
    readonly key: KeySnapshot,
    readonly account: AccountSnapshot,
    readonly micro: bigint,
  ) {}
  /** true the first time: the counter releases the hold once */
  end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    return true;
  }
}

export type ReserveResult = { ok: true; reservation: Reservation } | { ok: false; spend: UnsettledSpend };

/** Whether reserving `est` more breaks the rule above (u unsettled, r held, room null: no limit). */
export function overReserve(u: bigint, r: bigint, est: bigint, room: bigint | null): boolean {
  if (room === null) return false;
  return r === 0n ? u >= room : u + r + est > room;
}

/**
 * The unsettled spend to give checkKeyPolicy for a subject overReserve refused: it refuses a limit at
 * settled + spend ≥ limit, i.e. exactly when u + r + est > room (integers), or u ≥ room when nothing is held.
 */
export function refusedSpend(u: bigint, r: bigint, est: bigint): bigint {
  return r === 0n ? u : u + r + est - 1n;
}

/**
 * The admission rule for one call's estimate against a key and its account, given each one's unsettled spend
 * (u) and what the calls in flight hold (r): the refusal, with the spend checkKeyPolicy needs to name the
 * limit, or null when the call may hold `est`. Both counters decide locally with it (Redis's script is the same
 * rule in Lua).
 */
export function refusal(
  ku: bigint,
  kr: bigint,
  au: bigint,
  ar: bigint,
  est: bigint,
  rooms: Rooms,
): ReserveResult | null {
  const kOver = overReserve(ku, kr, est, rooms.key);
  const aOver = overReserve(au, ar, est, rooms.account);
  if (!kOver && !aOver) return null;
  return {
    ok: false,
    spend: {
      keySpent: kOver ? refusedSpend(ku, kr, est) : ku,
      accountSpent: aOver ? refusedSpend(au, ar, est) : au,
    },
  };
}
