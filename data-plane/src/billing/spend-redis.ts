import type { Redis, Result } from "ioredis";
import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import type { UnsettledSpend } from "../policy/check.ts";
import { TurnBatcher } from "../redis/turn-batcher.ts";
import { batchWritesThisTurn } from "../redis/write-batch.ts";
import { accountSettledSpend, keySettled, unsettled, type SpendCounter } from "./spend.ts";

// Adds to the key's and the account's counters in one round trip, first lifting each to the snapshot's settled
// figure when it fell behind (see spend.ts). Money stays exact: Redis' INCRBY is int64, the comparison is on
// decimal strings, and the totals come back as strings (a Lua number is a double and would round past 2^53).
const ADD_LUA = `
local function less(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a < #b end
  return a < b
end
local out = {}
for i = 1, 2 do
  local floor = ARGV[1 + i]
  if floor ~= '' then
    local cur = redis.call('GET', KEYS[i]) or '0'
    if less(cur, floor) then redis.call('SET', KEYS[i], floor) end
  end
  redis.call('INCRBY', KEYS[i], ARGV[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
  out[i] = redis.call('GET', KEYS[i])
end
return out
`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    modelgateSpendAdd(...args: (string | number)[]): Result<string[], Context>;
  }
}

export interface RedisSpendCounterOptions {
  /** key prefix; default "mg:spend:" */
  prefix?: string;
  /** a cached counter younger than this is used as is; default 250 ms */
  refreshMs?: number;
  /** a cached counter older than refreshMs but younger than this is used while a refresh runs; default 2000 */
  maxStaleMs?: number;
  /**
   * Counters expire this long after their last add (default 7 days). Expiry is safe: a missing counter reads
   * as 0 and the next add lifts it to the snapshot's settled figure.
   */
  ttlMs?: number;
  /**
   * A cached counter not read or added to for this long is forgotten (its next use reads Redis again), except
   * while Redis fails (the cache then holds this replica's own spend); default 60000
   */
  idleMs?: number;
  /** counters the idle sweep looks at per slice (it runs in slices on calls' path); default 2000 */
  sweepSlice?: number;
  onError?: (err: unknown) => void;
  clock?: () => number;
}

interface PendingAdd {
  key: KeySnapshot;
  account: AccountSnapshot;
  micro: bigint;
}

/** the gap between two slices of the idle sweep */
const SWEEP_GAP_MS = 10;

interface Cached {
  value: bigint;
  fetchedAt: number;
  refreshing: boolean;
}

/**
 * Counters shared by every replica, read through a per-replica cache so the request path usually does no
 * Redis round trip at all: an add refreshes the cache with the totals Redis returns, and a stale entry is
 * refreshed in the background (or awaited when older than maxStaleMs). The price is that other replicas'
 * spend is seen up to refreshMs late, which adds to the overrun bound documented in spend.ts.
 */
export class RedisSpendCounter implements SpendCounter {
  private readonly prefix: string;
  private readonly refreshMs: number;
  private readonly maxStaleMs: number;
  private readonly ttlMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly clock: () => number;
  private readonly cache = new Map<string, Cached>();
  private readonly idleMs: number;
  private readonly sweepSlice: number;
  /** when the next slice of the sweep is due; the sweep in progress (null: none) */
  private sweepAt: number;
  private sweeping: Iterator<[string, Cached]> | null = null;
  private failedAt = Number.NEGATIVE_INFINITY;
  private readonly adds = new TurnBatcher<PendingAdd>((kName, adds) => this.send(kName, adds));

  constructor(
    private readonly redis: Redis,
    options: RedisSpendCounterOptions = {},
  ) {
    this.prefix = options.prefix ?? "mg:spend:";
    this.refreshMs = options.refreshMs ?? 250;
    this.maxStaleMs = options.maxStaleMs ?? 2000;
    this.ttlMs = options.ttlMs ?? 7 * 24 * 3600 * 1000;
    this.onError = options.onError ?? (() => {});
    this.clock = options.clock ?? Date.now;
    this.idleMs = options.idleMs ?? 60_000;
    this.sweepSlice = options.sweepSlice ?? 2_000;
    this.sweepAt = this.clock() + this.idleMs;
    redis.defineCommand("modelgateSpendAdd", { numberOfKeys: 2, lua: ADD_LUA });
  }

  private keyName(accountId: string, keyId: string): string {
    return `${this.prefix}{acct:${accountId}}:k:${keyId}`;
  }
  private accountName(accountId: string): string {
    return `${this.prefix}{acct:${accountId}}:a`;
  }

  /** Adds in the same event-loop turn to one key are summed and sent as one script call. */
  // Every call reads the counters (twice) and adds to them: the names are built once per snapshot object.
  private readonly keyNames = new WeakMap<KeySnapshot, string>();
  private readonly accountNames = new WeakMap<AccountSnapshot, string>();
  private keyNameOf(key: KeySnapshot, account: AccountSnapshot): string {
    let n = this.keyNames.get(key);
    if (n === undefined) this.keyNames.set(key, (n = this.keyName(account.id, key.id)));
    return n;
  }
  private accountNameOf(account: AccountSnapshot): string {
    let n = this.accountNames.get(account);
    if (n === undefined) this.accountNames.set(account, (n = this.accountName(account.id)));
    return n;
  }

  add(key: KeySnapshot, account: AccountSnapshot, micro: bigint): Promise<void> {
    return this.adds.add(this.keyNameOf(key, account), { key, account, micro });
  }

  private async send(kName: string, adds: PendingAdd[]): Promise<void> {
    // The latest snapshots of the turn carry the highest settled floors.
    const { key, account } = adds[adds.length - 1]!;
    let micro = 0n;
    for (const a of adds) micro += a.micro;
    const aName = this.accountNameOf(account);
    const aSettled = accountSettledSpend(account);
    try {
      batchWritesThisTurn(this.redis);
      const [kTotal, aTotal] = await this.redis.modelgateSpendAdd(
        kName,
        aName,
        micro.toString(),
        keySettled(key).toString(),
        aSettled === null ? "" : aSettled.toString(),
        this.ttlMs,
      );
      const now = this.clock();
      this.store(kName, BigInt(kTotal!), now);
      this.store(aName, BigInt(aTotal!), now);
    } catch (err) {
      // This replica still sees its own spend; the usage event (spooled if need be) settles it later.
      this.failed(err);
      this.bump(kName, micro);
      this.bump(aName, micro);
    }
  }

  get(key: KeySnapshot, account: AccountSnapshot): UnsettledSpend | Promise<UnsettledSpend> {
    const kName = this.keyNameOf(key, account);
    const aName = this.accountNameOf(account);
    const k = this.cache.get(kName);
    const a = this.cache.get(aName);
    const now = this.clock();
    if (now >= this.sweepAt) this.sweep(now);
    if (k !== undefined && a !== undefined) {
      const age = now - (k.fetchedAt < a.fetchedAt ? k.fetchedAt : a.fetchedAt);
      if (age < this.refreshMs) return this.result(k.value, a.value, key, account);
      if (age < this.maxStaleMs) {
        if (!k.refreshing && !a.refreshing) void this.fetch(kName, aName);
        return this.result(k.value, a.value, key, account);
      }
    }
    return this.fetch(kName, aName).then(() =>
      this.result(this.cache.get(kName)?.value ?? 0n, this.cache.get(aName)?.value ?? 0n, key, account),
    );
  }

  /** counters cached (metrics, tests) */
  get cached(): number {
    return this.cache.size;
  }

  private failed(err: unknown): void {
    this.failedAt = this.clock();
    this.onError(err);
  }

  /**
   * Forgets the counters idle for idleMs: the cache would otherwise hold one entry per key and account ever
   * used (at a million keys, hundreds of MB of heap), and one that old is read from Redis again anyway (a get
   * waits for Redis past maxStaleMs). A counter in use is refreshed at least every maxStaleMs, by a get or an
   * add, so only idle ones are that old, or every one while Redis fails: then nothing is forgotten, as the
   * cache holds the spend this replica could not add to Redis.
   *
   * It runs on a call's path, so in slices: a walk over a million counters at once would hold that call (and
   * every other) for tens of ms. Each slice looks at sweepSlice counters (a few tens of µs) and the next is due
   * SWEEP_GAP_MS later (a Map's iterator survives deletions and sees entries added meanwhile); a sweep of a
   * million takes a few seconds of calls, once per idleMs.
   */
  private sweep(now: number): void {
    if (now - this.failedAt < this.idleMs) {
      this.sweeping = null;
      this.sweepAt = now + this.idleMs;
      return;
    }
    const it = (this.sweeping ??= this.cache.entries());
    for (let i = 0; i < this.sweepSlice; i++) {
      const next = it.next();
      if (next.done === true) {
        this.sweeping = null;
        this.sweepAt = now + this.idleMs;
        return;
      }
      const [name, c] = next.value;
      if (!c.refreshing && now - c.fetchedAt >= this.idleMs) this.cache.delete(name);
    }
    this.sweepAt = now + SWEEP_GAP_MS;
  }

  private result(kValue: bigint, aValue: bigint, key: KeySnapshot, account: AccountSnapshot): UnsettledSpend {
    return {
      keySpent: unsettled(kValue, keySettled(key)),
      accountSpent: unsettled(aValue, accountSettledSpend(account)),
    };
  }

  private async fetch(kName: string, aName: string): Promise<void> {
    const k = this.cache.get(kName);
    const a = this.cache.get(aName);
    if (k !== undefined) k.refreshing = true;
    if (a !== undefined) a.refreshing = true;
    try {
      const [kv, av] = await this.redis.mget(kName, aName);
      const now = this.clock();
      this.store(kName, BigInt(kv ?? "0"), now);
      this.store(aName, BigInt(av ?? "0"), now);
    } catch (err) {
      // Fail static: keep serving the last known counters (or none) while Redis is away.
      this.failed(err);
      if (k !== undefined) k.refreshing = false;
      if (a !== undefined) a.refreshing = false;
    }
  }

  private store(name: string, value: bigint, now: number): void {
    const c = this.cache.get(name);
    if (c === undefined) {
      this.cache.set(name, { value, fetchedAt: now, refreshing: false });
    } else {
      c.value = value;
      c.fetchedAt = now;
      c.refreshing = false;
    }
  }

  private bump(name: string, micro: bigint): void {
    const c = this.cache.get(name);
    if (c === undefined) this.cache.set(name, { value: micro, fetchedAt: this.clock(), refreshing: false });
    else c.value += micro;
  }

  async reset(accountId: string, keyId?: string): Promise<void> {
    const name = keyId === undefined ? this.accountName(accountId) : this.keyName(accountId, keyId);
    this.cache.delete(name);
    await this.redis.del(name);
  }

  async close(): Promise<void> {
    await this.adds.flush();
    this.cache.clear();
  }
}
