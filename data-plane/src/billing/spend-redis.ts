import { randomBytes } from "node:crypto";
import type { Redis, Result } from "ioredis";
import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import type { UnsettledSpend } from "../policy/check.ts";
import { TurnBatcher } from "../redis/turn-batcher.ts";
import { batchWritesThisTurn } from "../redis/write-batch.ts";
import { Reservation, refusal, refusedSpend, type ReserveResult, type Rooms } from "./reservation.ts";
import { LiftFloors } from "./lift-floors.ts";
import { accountSettledSpend, keySettled, unsettled, type SpendCounter } from "./spend.ts";

// What the calls in flight hold (reservations, see reservation.ts) lives beside each counter in a hash with one
// field per replica: "<micro> <expiry>", this replica's total for the counter, written as an absolute figure
// (so any script of the replica's may carry it, in any order, and the last one wins) and expiring
// RESERVE_TTL_MS after it was written unless the replica writes it again (its heartbeat does, while calls
// are in flight). A replica that dies holding reservations stops blocking the others once its fields expire.
// Expiry goes by Redis' clock (TIME), so replicas' clocks do not matter. The sums are Lua numbers (doubles):
// exact to 2^53 micro-units (9 billion units), far beyond any single account's money in flight.
//
// A second field per replica, "<replica>:u" = "<micro> <expiry>": the costs of its finished calls that wait for
// their add (RedisSpendCounter.unsent). They are spend, not holds: every script counts them with the counter (so
// a call may still go alone with what is left, reservation.ts) and answers the counters with the other replicas'
// unsent costs included. (A replica of the release before reads that field as another replica's hold: on the
// safe side while replicas of both run during an upgrade.)
const HOLDS_LUA = `
local function fmt(x) return string.format('%.0f', x) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- what the other replicas hold, and their unsent costs, dropping fields past their expiry
local function others(hash, me, now)
  local all = redis.call('HGETALL', hash)
  local held, unsent = 0, 0
  local mine = me .. ':u'
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local sp = string.find(v, ' ', 1, true)
    if tonumber(string.sub(v, sp + 1)) <= now then redis.call('HDEL', hash, f)
    elseif f ~= me and f ~= mine then
      if string.sub(f, -2) == ':u' then unsent = unsent + tonumber(string.sub(v, 1, sp - 1))
      else held = held + tonumber(string.sub(v, 1, sp - 1)) end
    end
  end
  return held, unsent
end
local function hold(hash, me, micro, unsent, now, ttl)
  micro, unsent = tonumber(micro), tonumber(unsent)
  local until_ = ' ' .. fmt(now + ttl)
  if micro > 0 then redis.call('HSET', hash, me, fmt(micro) .. until_) else redis.call('HDEL', hash, me) end
  if unsent ~= 0 then redis.call('HSET', hash, me .. ':u', fmt(unsent) .. until_)
  else redis.call('HDEL', hash, me .. ':u') end
  if micro > 0 or unsent ~= 0 then redis.call('PEXPIRE', hash, ttl * 2) end
end
-- a counter with the other replicas' unsent costs (exact as a string while there are none)
local function spent(cur, unsent)
  if unsent == 0 then return cur end
  return fmt(tonumber(cur) + unsent)
end
`;

// Adds to the key's and the account's counters in one round trip, first lifting each to the snapshot's settled
// figure when it fell behind (see spend.ts), and writes what this replica holds on them after the add (a
// settled call's hold is gone from it: the release and the cost are one step). Money stays exact: Redis'
// INCRBY is int64, the comparison is on decimal strings, and the totals come back as strings (a Lua number is a
// double and would round past 2^53). Answers the two totals (with the other replicas' unsent costs) and what the
// other replicas hold.
// KEYS: key counter, account counter, key holds, account holds.
// ARGV: micro, key floor, account floor ('' none: no lift), counter TTL, replica, key held, account held, hold TTL,
// key unsent, account unsent (this replica's, after this add).
const ADD_LUA =
  HOLDS_LUA +
  `
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
local now = clock()
for i = 1, 2 do
  hold(KEYS[2 + i], ARGV[5], ARGV[5 + i], ARGV[8 + i], now, tonumber(ARGV[8]))
  local held, unsent = others(KEYS[2 + i], ARGV[5], now)
  out[i] = spent(out[i], unsent)
  out[2 + i] = fmt(held)
end
return out
`;

// Admits a reservation atomically: the rule of reservation.ts on both subjects against the counters and every
// replica's holds, and on success this replica's holds raised by the estimate. Answers the verdict (0 held,
// 1 the key refused, 2 the account, 3 both), the two counters and what the other replicas hold.
// KEYS: as ADD. ARGV: replica, estimate, key held, account held (this replica's, without this call), key floor,
// account floor ('' none: its unsettled spend is 0), key room, account room ('' no limit), hold TTL, key unsent,
// account unsent (this replica's, see above).
const RESERVE_LUA =
  HOLDS_LUA +
  `
local now = clock()
local est = tonumber(ARGV[2])
local out = {'0'}
local verdict = 0
for i = 1, 2 do
  local cur = redis.call('GET', KEYS[i]) or '0'
  local o, ou = others(KEYS[2 + i], ARGV[1], now)
  local r = o + tonumber(ARGV[2 + i])
  local u = 0
  if ARGV[4 + i] ~= '' then u = math.max(0, tonumber(cur) + ou + tonumber(ARGV[9 + i]) - tonumber(ARGV[4 + i])) end
  if ARGV[6 + i] ~= '' then
    local room = tonumber(ARGV[6 + i])
    local over
    if r == 0 then over = u >= room else over = u + r + est > room end
    if over then verdict = verdict + i end
  end
  out[1 + i] = spent(cur, ou)
  out[3 + i] = fmt(o)
end
if verdict == 0 then
  for i = 1, 2 do hold(KEYS[2 + i], ARGV[1], tonumber(ARGV[2 + i]) + est, ARGV[9 + i], now, tonumber(ARGV[9])) end
end
out[1] = tostring(verdict)
return out
`;

// What a cache refresh reads: the two counters and what the other replicas hold. KEYS: as ADD. ARGV: replica.
const VIEW_LUA =
  HOLDS_LUA +
  `
local now = clock()
local kh, ku = others(KEYS[3], ARGV[1], now)
local ah, au = others(KEYS[4], ARGV[1], now)
return {spent(redis.call('GET', KEYS[1]) or '0', ku), spent(redis.call('GET', KEYS[2]) or '0', au), fmt(kh), fmt(ah)}
`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    modelgateSpendAdd(...args: (string | number)[]): Result<string[], Context>;
    modelgateSpendReserve(...args: (string | number)[]): Result<string[], Context>;
    modelgateSpendView(...args: (string | number)[]): Result<string[], Context>;
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
  /**
   * What this replica holds for calls in flight expires in Redis this long after it last wrote it (default
   * 30000); its heartbeat writes it again every third of that, so only a replica that died stops doing so.
   */
  reserveTtlMs?: number;
  /**
   * Holds taken without a round trip (far from every limit) are written to Redis within this long (default
   * 250, the cache's refresh); a call that ends sooner writes them with its cost, in the same script.
   */
  publishMs?: number;
  /**
   * Finished calls' costs are added to Redis within this long (default 100 ms; 0: at the end of the event-loop
   * turn), summed per key: one script per key per window instead of one per call. This replica counts them at
   * once; until they are sent, the hold figure it writes to Redis carries them (see `unsent`).
   */
  addWindowMs?: number;
  /**
   * A counter that fell behind the settled figure is lifted only to a figure this replica has seen for at least
   * this long (default 10000; 0: the batch's own snapshots, at once). See lift-floors.ts.
   */
  liftAfterMs?: number;
  onError?: (err: unknown) => void;
  clock?: () => number;
}

interface PendingAdd {
  key: KeySnapshot;
  account: AccountSnapshot;
  micro: bigint;
}

/**
 * A spend counter's name in Redis: the key's, or the account's without keyId. `prefix` is the counter's
 * (the deployment's Redis prefix and "spend:").
 */
export function spendCounterName(prefix: string, accountId: string, keyId?: string): string {
  return keyId === undefined ? `${prefix}{acct:${accountId}}:a` : `${prefix}{acct:${accountId}}:k:${keyId}`;
}

/** the gap between two slices of the idle sweep */
const SWEEP_GAP_MS = 10;

interface Cached {
  value: bigint;
  /** what the other replicas hold on this counter */
  others: bigint;
  fetchedAt: number;
  refreshing: boolean;
}

/** What this replica holds on one counter, and the figure Redis has of it (last written). */
interface Held {
  held: bigint;
  published: bigint;
  /**
   * The holds part of `published` (without the unsent costs it carried). Kept, not derived as `published` less
   * `unsent`: a finished call's cost joins `unsent` at once but Redis' figure only with the next script, so that
   * difference is short by the costs counted since the write (and long by a refund): a settle just after a
   * cost larger than the holds Redis shows would find none and leave its release to the window.
   */
  publishedHeld: bigint;
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
  private readonly adds: TurnBatcher<PendingAdd>;
  /** adds that release holds Redis shows (see settle): at the end of the turn */
  private readonly urgentAdds = new TurnBatcher<PendingAdd>((kName, adds) => this.send(kName, adds));
  /**
   * Costs added on this replica and not yet sent to Redis, by counter name. Until its add goes out a finished
   * call's cost is in no counter in Redis, and its hold is released here: so every script this replica sends
   * writes them beside its holds (the field's <unsent>), where every replica's scripts count them as spend, and
   * Redis never shows less than was spent. They leave the field in the same script that adds them.
   */
  private readonly unsent = new Map<string, bigint>();
  /**
   * Costs added on this replica that no reply from Redis has counted yet (unsent, or sent and not answered):
   * the cached counters hold Redis' last figure plus these, so this replica sees its own spend at once.
   */
  private readonly unanswered = new Map<string, bigint>();
  /** this replica in the holds' hashes */
  private readonly replica = randomBytes(6).toString("hex");
  private readonly reserveTtlMs: number;
  /** holds by counter name; an entry goes once nothing is held and Redis knows it */
  private readonly holds = new Map<string, Held>();
  /** the snapshots of the keys this replica holds on (by key counter name), for writing their holds */
  private readonly holders = new Map<string, { key: KeySnapshot; account: AccountSnapshot }>();
  private readonly publishes: TurnBatcher<string>;
  private readonly heartbeat: NodeJS.Timeout;
  /** the settled figures the batches of adds carried, for the lift (lift-floors.ts) */
  private readonly floors: LiftFloors;

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
    this.reserveTtlMs = options.reserveTtlMs ?? 30_000;
    this.floors = new LiftFloors(options.liftAfterMs ?? 10_000);
    redis.defineCommand("modelgateSpendAdd", { numberOfKeys: 4, lua: ADD_LUA });
    redis.defineCommand("modelgateSpendReserve", { numberOfKeys: 4, lua: RESERVE_LUA });
    redis.defineCommand("modelgateSpendView", { numberOfKeys: 4, lua: VIEW_LUA });
    // Nobody waits for these: once per window, in the turn's one write to Redis.
    this.publishes = new TurnBatcher<string>((kName) => this.publish(kName), { windowMs: options.publishMs ?? 250 });
    // At a steady trickle of calls, a script per call was the largest part of Redis' CPU per call (bench: about
    // 100 µs per call at 300 req/s); summed per key per window, a busy key costs one script per window.
    this.adds = new TurnBatcher<PendingAdd>((kName, adds) => this.send(kName, adds), {
      windowMs: options.addWindowMs ?? 100,
    });
    this.heartbeat = setInterval(() => this.renewHolds(), Math.max(1, Math.floor(this.reserveTtlMs / 3)));
    this.heartbeat.unref();
  }

  private keyName(accountId: string, keyId: string): string {
    return spendCounterName(this.prefix, accountId, keyId);
  }
  private accountName(accountId: string): string {
    return spendCounterName(this.prefix, accountId);
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

  /**
   * Counts the cost on this replica at once and sends it to Redis within addWindowMs; resolves once Redis took
   * it (a caller need not wait: this replica's next call already sees it).
   */
  add(key: KeySnapshot, account: AccountSnapshot, micro: bigint, urgent = false): Promise<void> {
    const kName = this.keyNameOf(key, account);
    if (micro !== 0n) {
      const aName = this.accountNameOf(account);
      for (const name of [kName, aName]) {
        shift(this.unsent, name, micro);
        shift(this.unanswered, name, micro);
        const c = this.cache.get(name);
        if (c !== undefined) c.value += micro;
      }
    }
    return (urgent ? this.urgentAdds : this.adds).add(kName, { key, account, micro });
  }

  /** What this replica's field in Redis carries (holds and unsent costs), summed: `Held.published`'s measure. */
  private heldFigure(name: string, held: bigint): bigint {
    return held + (this.unsent.get(name) ?? 0n);
  }
  /**
   * A hold as the local rule weighs it: the figure Redis should have, against the one it was last sent. (The
   * cached counter counts this replica's unsent costs too, so a local decision counts them twice: on the safe
   * side, for at most addWindowMs of its spend.)
   */
  private figureOf(name: string, h: Held): Held {
    return { held: this.heldFigure(name, h.held), published: h.published, publishedHeld: h.publishedHeld };
  }

  private async send(kName: string, adds: PendingAdd[]): Promise<void> {
    const { key, account } = adds[adds.length - 1]!;
    let micro = 0n;
    // The floors a counter that fell behind is lifted to (spend.ts): the oldest snapshots of the batch. A cost
    // waits here for its window while its usage event may settle, so a newer snapshot's settled figure can
    // hold costs this batch, or a batch still waiting (another key's, on the account's counter), adds later:
    // lifted to that, the counter would count them twice. The oldest snapshot of the batch predates every one
    // of its calls; the account's costs still waiting elsewhere come off its floor (below). Other replicas' costs
    // on their way are kept out by lifting only to a figure seen long enough ago (lift-floors.ts).
    let kFloor = keySettled(key);
    let aFloor = accountSettledSpend(account);
    for (const a of adds) {
      micro += a.micro;
      const k = keySettled(a.key);
      if (k < kFloor) kFloor = k;
      const f = accountSettledSpend(a.account);
      if (f === null || aFloor === null) aFloor = null;
      else if (f < aFloor) aFloor = f;
    }
    const aName = this.accountNameOf(account);
    const kHeld = this.holdOf(kName);
    const aHeld = this.holdOf(aName);
    // From this script on the batch's cost is in the counters, so it leaves the hold figure in the same step.
    shift(this.unsent, kName, -micro);
    shift(this.unsent, aName, -micro);
    // A send that adds nothing (holds only) lifts nothing: the next add does, with its own calls' snapshots.
    const now = this.clock();
    const kTo = micro === 0n ? null : this.floors.floor(kName, kFloor, now);
    const aTo = micro === 0n || aFloor === null ? null : this.floors.floor(aName, aFloor, now);
    const kLift = kTo === null ? "" : (kTo - (this.unsent.get(kName) ?? 0n)).toString();
    const aLift = aTo === null ? "" : (aTo - (this.unsent.get(aName) ?? 0n)).toString();
    const kFigure = this.heldFigure(kName, kHeld.held);
    const aFigure = this.heldFigure(aName, aHeld.held);
    // what Redis will have of this replica's holds (the figures as of now: later changes write their own)
    kHeld.published = kFigure;
    aHeld.published = aFigure;
    kHeld.publishedHeld = kHeld.held;
    aHeld.publishedHeld = aHeld.held;
    try {
      batchWritesThisTurn(this.redis);
      const [kTotal, aTotal, kOthers, aOthers] = await this.redis.modelgateSpendAdd(
        kName,
        aName,
        `${kName}:held`,
        `${aName}:held`,
        micro.toString(),
        kLift,
        aLift,
        this.ttlMs,
        this.replica,
        kHeld.held.toString(),
        aHeld.held.toString(),
        this.reserveTtlMs,
        (this.unsent.get(kName) ?? 0n).toString(),
        (this.unsent.get(aName) ?? 0n).toString(),
      );
      shift(this.unanswered, kName, -micro);
      shift(this.unanswered, aName, -micro);
      const answeredAt = this.clock();
      this.store(kName, BigInt(kTotal!), BigInt(kOthers!), answeredAt);
      this.store(aName, BigInt(aTotal!), BigInt(aOthers!), answeredAt);
    } catch (err) {
      // This replica still sees its own spend (its cached counters count it); the usage event (spooled if need
      // be) settles it later. What Redis has of its holds is unknown: taken as nothing, so its next calls ask
      // Redis (and fail static).
      this.failed(err);
      shift(this.unanswered, kName, -micro);
      shift(this.unanswered, aName, -micro);
      if (!this.cache.has(kName)) this.bump(kName, micro);
      if (!this.cache.has(aName)) this.bump(aName, micro);
      kHeld.published = kHeld.publishedHeld = 0n;
      aHeld.published = aHeld.publishedHeld = 0n;
    }
    this.dropIdleHold(kName, key.id);
    this.dropIdleHold(aName, null);
  }

  /**
   * Admits a call's estimate (reservation.ts's rule). Far from every limit by this replica's view of Redis (at
   * most refreshMs old, or maxStaleMs while a refresh runs) the hold is taken here, without a round trip, and
   * written to Redis within publishMs: the holds Redis does not know of yet, this call's included, must keep
   * within half of what Redis left free for this replica, so a replica's unwritten holds are never what
   * overruns a limit by themselves. Otherwise Redis decides, atomically against every replica's holds.
   */
  async reserve(key: KeySnapshot, account: AccountSnapshot, micro: bigint, rooms: Rooms): Promise<ReserveResult> {
    const kName = this.keyNameOf(key, account);
    const aName = this.accountNameOf(account);
    const kHeld = this.holdOf(kName);
    const aHeld = this.holdOf(aName);
    const k = this.cache.get(kName);
    const a = this.cache.get(aName);
    const now = this.clock();
    if (k !== undefined && a !== undefined) {
      const age = now - (k.fetchedAt < a.fetchedAt ? k.fetchedAt : a.fetchedAt);
      if (age < this.maxStaleMs) {
        if (age >= this.refreshMs && !k.refreshing && !a.refreshing) void this.fetch(kName, aName);
        if (
          fitsLocally(unsettled(k.value, keySettled(key)), k.others, this.figureOf(kName, kHeld), micro, rooms.key) &&
          fitsLocally(
            unsettled(a.value, accountSettledSpend(account)),
            a.others,
            this.figureOf(aName, aHeld),
            micro,
            rooms.account,
          )
        ) {
          kHeld.held += micro;
          aHeld.held += micro;
          this.holders.set(kName, { key, account });
          void this.publishes.add(kName, kName);
          return { ok: true, reservation: new Reservation(key, account, micro) };
        }
      }
    }
    return this.reserveInRedis(key, account, micro, rooms, kName, aName, kHeld, aHeld);
  }

  private async reserveInRedis(
    key: KeySnapshot,
    account: AccountSnapshot,
    micro: bigint,
    rooms: Rooms,
    kName: string,
    aName: string,
    kHeld: Held,
    aHeld: Held,
  ): Promise<ReserveResult> {
    const kBefore = kHeld.held;
    const aBefore = aHeld.held;
    const kUnsent = this.unsent.get(kName) ?? 0n;
    const aUnsent = this.unsent.get(aName) ?? 0n;
    // Held while Redis decides: this replica's other calls meanwhile count it (erring on the safe side).
    kHeld.held += micro;
    aHeld.held += micro;
    this.holders.set(kName, { key, account });
    const kSettled = keySettled(key);
    const aSettled = accountSettledSpend(account);
    let answer: string[];
    try {
      batchWritesThisTurn(this.redis);
      answer = await this.redis.modelgateSpendReserve(
        kName,
        aName,
        `${kName}:held`,
        `${aName}:held`,
        this.replica,
        micro.toString(),
        kBefore.toString(),
        aBefore.toString(),
        kSettled.toString(),
        aSettled === null ? "" : aSettled.toString(),
        rooms.key === null ? "" : rooms.key.toString(),
        rooms.account === null ? "" : rooms.account.toString(),
        this.reserveTtlMs,
        kUnsent.toString(),
        aUnsent.toString(),
      );
    } catch (err) {
      // Fail static: the rule against this replica's last view of Redis and its own holds.
      this.failed(err);
      this.unhold(kName, aName, key.id, micro);
      const k = this.cache.get(kName);
      const a = this.cache.get(aName);
      return this.decide(
        key,
        account,
        micro,
        rooms,
        unsettled(k?.value ?? 0n, kSettled),
        (k?.others ?? 0n) + kHeld.held,
        unsettled(a?.value ?? 0n, aSettled),
        (a?.others ?? 0n) + aHeld.held,
        kName,
      );
    }
    const [verdict, kTotal, aTotal, kOthers, aOthers] = answer;
    const now = this.clock();
    this.store(kName, BigInt(kTotal!), BigInt(kOthers!), now);
    this.store(aName, BigInt(aTotal!), BigInt(aOthers!), now);
    if (verdict === "0") {
      // Redis has this replica's hold figures as they were when the script went out, this call's included.
      kHeld.published = kBefore + micro + kUnsent;
      aHeld.published = aBefore + micro + aUnsent;
      kHeld.publishedHeld = kBefore + micro;
      aHeld.publishedHeld = aBefore + micro;
      return { ok: true, reservation: new Reservation(key, account, micro) };
    }
    this.unhold(kName, aName, key.id, micro);
    // what the rule weighed: the counters with this replica's unsent costs (see RESERVE_LUA)
    const ku = unsettled(BigInt(kTotal!) + kUnsent, kSettled);
    const au = unsettled(BigInt(aTotal!) + aUnsent, aSettled);
    const kr = BigInt(kOthers!) + kBefore;
    const ar = BigInt(aOthers!) + aBefore;
    return {
      ok: false,
      spend: {
        keySpent: verdict === "1" || verdict === "3" ? refusedSpend(ku, kr, micro) : ku,
        accountSpent: verdict === "2" || verdict === "3" ? refusedSpend(au, ar, micro) : au,
      },
    };
  }

  /** The rule decided here (Redis away), holding on success. */
  private decide(
    key: KeySnapshot,
    account: AccountSnapshot,
    micro: bigint,
    rooms: Rooms,
    ku: bigint,
    kr: bigint,
    au: bigint,
    ar: bigint,
    kName: string,
  ): ReserveResult {
    const refused = refusal(ku, kr, au, ar, micro, rooms);
    if (refused) return refused;
    this.holdOf(kName).held += micro;
    this.holdOf(this.accountNameOf(account)).held += micro;
    this.holders.set(kName, { key, account });
    void this.publishes.add(kName, kName);
    return { ok: true, reservation: new Reservation(key, account, micro) };
  }

  settle(r: Reservation, micro: bigint): Promise<void> {
    if (!r.end()) return Promise.resolve();
    const kName = this.keyNameOf(r.key, r.account);
    const aName = this.accountNameOf(r.account);
    const kHeld = this.holds.get(kName);
    const aHeld = this.holds.get(aName);
    release(kHeld, r.micro);
    release(aHeld, r.micro);
    // Always sent, a free call too: the script writes the hold's release with the cost (0 adds nothing). While
    // Redis shows holds of this replica's (near a limit, where Redis decided, or a long call's), the other
    // replicas weigh them: the release goes at the end of the turn, so a call elsewhere may go alone with
    // what is left at once, as before the window. Far from every limit, nobody waits for it.
    const urgent = (kHeld?.publishedHeld ?? 0n) > 0n || (aHeld?.publishedHeld ?? 0n) > 0n;
    return this.add(r.key, r.account, micro, urgent);
  }

  private holdOf(name: string): Held {
    let h = this.holds.get(name);
    if (h === undefined) this.holds.set(name, (h = { held: 0n, published: 0n, publishedHeld: 0n }));
    return h;
  }

  /** Gives back a hold taken for a call Redis refused or did not answer (Redis may have it: written again). */
  private unhold(kName: string, aName: string, keyId: string, micro: bigint): void {
    release(this.holds.get(kName), micro);
    release(this.holds.get(aName), micro);
    void this.publishes.add(kName, kName);
    this.dropIdleHold(kName, keyId);
    this.dropIdleHold(aName, null);
  }

  /** Forgets a counter's hold once nothing is held and Redis knows it. */
  private dropIdleHold(name: string, keyId: string | null): void {
    const h = this.holds.get(name);
    if (h === undefined || h.held !== 0n || h.published !== 0n) return;
    this.holds.delete(name);
    if (keyId !== null) this.holders.delete(name);
  }

  /** Writes a key's (and its account's) holds when Redis does not have them as they are. */
  private async publish(kName: string): Promise<void> {
    const holder = this.holders.get(kName);
    // an add about to go writes the holds too
    if (holder === undefined || this.adds.waiting(kName) || this.urgentAdds.waiting(kName)) return;
    const aName = this.accountNameOf(holder.account);
    const k = this.holds.get(kName);
    const a = this.holds.get(aName);
    if (
      (k === undefined || this.heldFigure(kName, k.held) === k.published) &&
      (a === undefined || this.heldFigure(aName, a.held) === a.published)
    )
      return;
    await this.send(kName, [{ key: holder.key, account: holder.account, micro: 0n }]);
  }

  /** The heartbeat: writes again every hold this replica has, so Redis keeps them while their calls run. */
  private renewHolds(): void {
    for (const [kName, holder] of this.holders) {
      const k = this.holds.get(kName);
      const a = this.holds.get(this.accountNameOf(holder.account));
      if ((k?.held ?? 0n) === 0n && (a?.held ?? 0n) === 0n) continue;
      void this.send(kName, [{ key: holder.key, account: holder.account, micro: 0n }]);
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
      if (!c.refreshing && now - c.fetchedAt >= this.idleMs) {
        this.cache.delete(name);
        this.floors.forget(name);
      }
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
      const [kv, av, ko, ao] = await this.redis.modelgateSpendView(
        kName,
        aName,
        `${kName}:held`,
        `${aName}:held`,
        this.replica,
      );
      const now = this.clock();
      this.store(kName, BigInt(kv!), BigInt(ko!), now);
      this.store(aName, BigInt(av!), BigInt(ao!), now);
    } catch (err) {
      // Fail static: keep serving the last known counters (or none) while Redis is away.
      this.failed(err);
      if (k !== undefined) k.refreshing = false;
      if (a !== undefined) a.refreshing = false;
    }
  }

  /** Caches Redis' figure of a counter, plus this replica's costs no reply has counted yet. */
  private store(name: string, redisValue: bigint, others: bigint, now: number): void {
    const value = redisValue + (this.unanswered.get(name) ?? 0n);
    const c = this.cache.get(name);
    if (c === undefined) {
      this.cache.set(name, { value, others, fetchedAt: now, refreshing: false });
    } else {
      c.value = value;
      c.others = others;
      c.fetchedAt = now;
      c.refreshing = false;
    }
  }

  private bump(name: string, micro: bigint): void {
    const c = this.cache.get(name);
    if (c === undefined) this.cache.set(name, { value: micro, others: 0n, fetchedAt: this.clock(), refreshing: false });
    else c.value += micro;
  }

  async reset(accountId: string, keyId?: string): Promise<void> {
    const name = keyId === undefined ? this.accountName(accountId) : this.keyName(accountId, keyId);
    this.cache.delete(name);
    this.floors.forget(name);
    await this.redis.del(name);
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.publishes.flush();
    await this.urgentAdds.flush();
    await this.adds.flush();
    this.cache.clear();
  }
}

/** Adds `micro` to a name's figure in a map of sums, forgetting it at zero. */
function shift(sums: Map<string, bigint>, name: string, micro: bigint): void {
  const v = (sums.get(name) ?? 0n) + micro;
  if (v === 0n) sums.delete(name);
  else sums.set(name, v);
}

function release(h: Held | undefined, micro: bigint): void {
  if (h !== undefined) h.held = h.held > micro ? h.held - micro : 0n;
}

/**
 * Whether a hold may be taken without asking Redis: the rule holds by this replica's view, and the holds Redis
 * does not know of yet (this call's included) take at most half of what Redis leaves free for this replica.
 */
function fitsLocally(u: bigint, others: bigint, h: Held, micro: bigint, room: bigint | null): boolean {
  if (room === null) return true;
  const free = room - u - others - h.published;
  return (h.held - h.published + micro) * 2n <= free;
}
