import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import { compileKey, type UnsettledSpend } from "../policy/check.ts";
import { Reservation, refusal, type ReserveResult, type Rooms } from "./reservation.ts";

// Running spend between snapshots.
//
// The counters are cumulative and only ever grow: each finished call adds its cost. The snapshot carries the
// cumulative *settled* spend (key.spent; account.spent), and unsettled = counter − settled, never below 0.
// A replica still on an older snapshot pairs an older (lower) settled figure with the current counter, so it
// counts recently settled spend twice: it errs on the safe side until its snapshot catches up. Nothing is
// ever decremented, so no race between the control plane's settlement and the snapshot's arrival can make
// spend vanish.
//
// A counter below the snapshot's settled figure (Redis lost its data, the counter expired, or a call's add
// failed while its usage event still settled) is lifted to the settled figure by the next add, so it never
// hides spend for long: the error is at most the spend whose add failed, until that spend settles. (In Redis an
// add waits up to 100 ms for its window while its call may settle, on this replica or another: it lifts to the
// oldest snapshot of its batch, less the account's costs still waiting, and only to a settled figure the replica
// has seen for 10 s, by when every cost in it has been added or has failed; so a cost is never counted twice,
// and a lost counter misses at most the last 10 s of settled spend until a later add lifts it. See
// spend-redis.ts and lift-floors.ts.)
//
// Maximum overrun: a call's cost is known only when it ends, so each admitted call holds an estimate of it
// (reserve, released with the actual cost by settle; see reservation.ts for the rule). A burst then overruns
// a quota, budget or balance by at most one call's cost plus what calls cost beyond their estimates; across
// replicas (Redis) add what a replica holds without asking Redis (RedisSpendCounter.reserve).
//
// A control-plane action that lowers a key's spent (a quota reset) must call reset(), or the old counter
// would count the cleared spend again.

export interface SpendCounter {
  /** Records a finished call's cost (micro-units; a negative value is a refund). */
  add(key: KeySnapshot, account: AccountSnapshot, micro: bigint): Promise<void>;
  /**
   * Admits a call against the money it may still spend, atomically: the call's estimate is held against the
   * key and the account until settle() (see reservation.ts for the rule). Refused, nothing is held and the
   * answer carries the spend figures that make checkKeyPolicy give the refusal the limit's exhaustion gives.
   */
  reserve(
    key: KeySnapshot,
    account: AccountSnapshot,
    micro: bigint,
    rooms: Rooms,
  ): ReserveResult | Promise<ReserveResult>;
  /** Ends a reservation: releases its hold and adds the call's actual cost, in one step. Idempotent. */
  settle(reservation: Reservation, micro: bigint): Promise<void>;
  /** Spend the given snapshot does not include yet, for checkKeyPolicy. */
  get(key: KeySnapshot, account: AccountSnapshot): UnsettledSpend | Promise<UnsettledSpend>;
  /** Forgets the counters of a key (or, without keyId, of the account) after the control plane lowered spent. */
  reset(accountId: string, keyId?: string): Promise<void>;
  close(): Promise<void>;
}

/** parsed account.spent, with the string it came from (a money change patches it in place: snapshot/store.ts) */
const accountSettled = new WeakMap<AccountSnapshot, { text: string | undefined; micro: bigint | null }>();

/** The snapshot's cumulative settled spend of the key. */
export const keySettled = (key: KeySnapshot): bigint => compileKey(key).spent;

/**
 * The snapshot's cumulative settled spend of the account; null when the control plane does not publish it,
 * in which case the account's balance is enforced from the snapshot alone (unsettled account spend is 0).
 */
export function accountSettledSpend(account: AccountSnapshot): bigint | null {
  let s = accountSettled.get(account);
  if (s === undefined || s.text !== account.spent) {
    s = { text: account.spent, micro: account.spent === undefined ? null : BigInt(account.spent) };
    accountSettled.set(account, s);
  }
  return s.micro;
}

/** counter − settled, never negative. */
export function unsettled(counter: bigint, settled: bigint | null): bigint {
  if (settled === null) return 0n;
  return counter > settled ? counter - settled : 0n;
}

/** The counter after an add: lifted to the settled figure first when it fell behind it. */
export function afterAdd(counter: bigint, settled: bigint | null, micro: bigint): bigint {
  return (settled !== null && counter < settled ? settled : counter) + micro;
}

/** Embedded mode: one process, so the counters are plain maps. */
export class MemorySpendCounter implements SpendCounter {
  private readonly keys = new Map<string, bigint>();
  private readonly accounts = new Map<string, bigint>();
  /** what the calls in flight hold, by key and by account */
  private readonly keysHeld = new Map<string, bigint>();
  private readonly accountsHeld = new Map<string, bigint>();

  reserve(key: KeySnapshot, account: AccountSnapshot, micro: bigint, rooms: Rooms): ReserveResult {
    const { keySpent: ku, accountSpent: au } = this.get(key, account);
    const kr = this.keysHeld.get(key.id) ?? 0n;
    const ar = this.accountsHeld.get(account.id) ?? 0n;
    const refused = refusal(ku, kr, au, ar, micro, rooms);
    if (refused) return refused;
    this.keysHeld.set(key.id, kr + micro);
    this.accountsHeld.set(account.id, ar + micro);
    return { ok: true, reservation: new Reservation(key, account, micro) };
  }

  settle(r: Reservation, micro: bigint): Promise<void> {
    if (!r.end()) return Promise.resolve();
    release(this.keysHeld, r.key.id, r.micro);
    release(this.accountsHeld, r.account.id, r.micro);
    return micro === 0n ? Promise.resolve() : this.add(r.key, r.account, micro);
  }

  async add(key: KeySnapshot, account: AccountSnapshot, micro: bigint): Promise<void> {
    this.keys.set(key.id, afterAdd(this.keys.get(key.id) ?? 0n, keySettled(key), micro));
    this.accounts.set(account.id, afterAdd(this.accounts.get(account.id) ?? 0n, accountSettledSpend(account), micro));
  }

  get(key: KeySnapshot, account: AccountSnapshot): UnsettledSpend {
    return {
      keySpent: unsettled(this.keys.get(key.id) ?? 0n, keySettled(key)),
      accountSpent: unsettled(this.accounts.get(account.id) ?? 0n, accountSettledSpend(account)),
    };
  }

  async reset(accountId: string, keyId?: string): Promise<void> {
    if (keyId === undefined) this.accounts.delete(accountId);
    else this.keys.delete(keyId);
  }

  async close(): Promise<void> {}
}

function release(held: Map<string, bigint>, id: string, micro: bigint): void {
  const left = (held.get(id) ?? 0n) - micro;
  if (left > 0n) held.set(id, left);
  else held.delete(id);
}
