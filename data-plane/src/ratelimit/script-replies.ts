// What acquire.lua and topup.lua answer, by name. Each script answers one flat array of numbers, a fixed
// run of them per call in the order the calls were sent; the decoders below are the only code that knows the
// positions (the scripts' headers list the same order).
import type { LimitKind, LimitScope } from "./types.ts";

/** The scripts number the six limits 1..6 (0 when nothing refused); the index says which one refused. */
const REFUSED_BY: readonly (readonly [LimitScope, LimitKind])[] = [
  ["key", "rpm"],
  ["key", "rpm"],
  ["key", "tpm"],
  ["key", "concurrency"],
  ["account", "rpm"],
  ["account", "tpm"],
  ["account", "concurrency"],
];

/** One call's answer from topup.lua (13 numbers); acquire.lua answers the same and two more. */
export interface TopUpReply {
  /** 0 refused, 1 taken; acquire only: 2 taken past a limit (a forced call, admitted locally) */
  status: number;
  /** the limit that refused (when status is 0): its scope and kind, ms until a retry may pass, its size, left */
  scope: LimitScope;
  kind: LimitKind;
  retryAfterMs: number;
  limit: number;
  remaining: number;
  /** what each rpm and tpm limit has left after this call, and ms until it is whole again */
  keyRpmRemaining: number;
  keyRpmResetMs: number;
  keyTpmRemaining: number;
  keyTpmResetMs: number;
  accountRpmRemaining: number;
  accountRpmResetMs: number;
  accountTpmRemaining: number;
  accountTpmResetMs: number;
}

/** One call's answer from acquire.lua (15 numbers). */
export interface AcquireReply extends TopUpReply {
  /** free slots of the key's and the account's concurrency limit after this call */
  keyConcurrencyFree: number;
  accountConcurrencyFree: number;
}

const TOPUP_REPLY_LENGTH = 13;
const ACQUIRE_REPLY_LENGTH = 15;

/** acquire.lua's answer to `calls` calls, one reply per call in the order sent. */
export function decodeAcquireReplies(flat: unknown, calls: number): AcquireReply[] {
  const r = numbersOf(flat, calls * ACQUIRE_REPLY_LENGTH);
  const out: AcquireReply[] = [];
  for (let at = 0; at < r.length; at += ACQUIRE_REPLY_LENGTH) {
    out.push({
      ...topUpReplyAt(r, at),
      keyConcurrencyFree: r[at + 13]!,
      accountConcurrencyFree: r[at + 14]!,
    });
  }
  return out;
}

/** topup.lua's answer to `calls` calls, one reply per call in the order sent. */
export function decodeTopUpReplies(flat: unknown, calls: number): TopUpReply[] {
  const r = numbersOf(flat, calls * TOPUP_REPLY_LENGTH);
  const out: TopUpReply[] = [];
  for (let at = 0; at < r.length; at += TOPUP_REPLY_LENGTH) out.push(topUpReplyAt(r, at));
  return out;
}

function numbersOf(flat: unknown, length: number): number[] {
  if (!Array.isArray(flat) || flat.length !== length) throw new Error("rate limiter: unexpected reply from Redis");
  return flat as number[];
}

function topUpReplyAt(r: number[], at: number): TopUpReply {
  const refusedBy = REFUSED_BY[r[at + 1]!];
  if (refusedBy === undefined) throw new Error("rate limiter: unexpected reply from Redis");
  return {
    status: r[at]!,
    scope: refusedBy[0],
    kind: refusedBy[1],
    retryAfterMs: r[at + 2]!,
    limit: r[at + 3]!,
    remaining: r[at + 4]!,
    keyRpmRemaining: r[at + 5]!,
    keyRpmResetMs: r[at + 6]!,
    keyTpmRemaining: r[at + 7]!,
    keyTpmResetMs: r[at + 8]!,
    accountRpmRemaining: r[at + 9]!,
    accountRpmResetMs: r[at + 10]!,
    accountTpmRemaining: r[at + 11]!,
    accountTpmResetMs: r[at + 12]!,
  };
}
