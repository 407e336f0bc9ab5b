import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Redis, Result } from "ioredis";
import type { RateLimits } from "../contract/snapshot.ts";
import { TurnBatcher } from "../redis/turn-batcher.ts";
import { batchWritesThisTurn } from "../redis/write-batch.ts";
import { MemoryRateLimiter } from "./memory.ts";
import { chargedUnits } from "./gcra.ts";
import { type Free, Headroom, resetMsOf } from "./headroom.ts";
import { type AcquireReply, decodeAcquireReplies, decodeTopUpReplies, type TopUpReply } from "./script-replies.ts";
import {
  hasAnyLimit,
  UNLIMITED_GRANT,
  sameRateLimits,
  tighterLimit,
  type AcquireResult,
  type RateLimitDenial,
  type RateLimitGrant,
  type RateLimiter,
  type RateLimitInfo,
  type RateLimitRequest,
  type TopUpResult,
} from "./types.ts";

// The four scripts live in lua/ beside this file (copied into dist/ by the build), each with its KEYS and ARGV.
const script = (name: string) => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), "utf8");
// acquire and topup share the GCRA state and its write-back (gcra-state.lua), in front of each
const GCRA_STATE_LUA = script("gcra-state");
const ACQUIRE_LUA = GCRA_STATE_LUA + script("acquire");
const RELEASE_LUA = script("release");
const RENEW_LUA = script("renew");
const TOPUP_LUA = GCRA_STATE_LUA + script("topup");

declare module "ioredis" {
  interface RedisCommander<Context> {
    modelgateRlAcquire(...args: (string | number)[]): Result<number[], Context>;
    modelgateRlRelease(...args: (string | number)[]): Result<number, Context>;
    modelgateRlRenew(...args: (string | number)[]): Result<number, Context>;
    modelgateRlTopUp(...args: (string | number)[]): Result<number[], Context>;
  }
}

export interface RedisRateLimiterOptions {
  /** key prefix, e.g. per deployment or per test run; default "mg:rl:" */
  prefix?: string;
  /** a lease outlives a dead replica by at most this; live replicas renew every third of it; default 60000 */
  leaseTtlMs?: number;
  concurrencyRetryMs?: number;
  /** used while Redis cannot be reached: each replica then enforces every limit on its own */
  fallback?: RateLimiter;
  /**
   * Local admission (see Headroom): a call goes on without waiting for Redis while, by this replica's latest
   * answer from Redis, every limit it touches keeps more than this share of itself free after it; default 0.5.
   * 1 or more turns it off (every call waits for Redis).
   */
  localFreeShare?: number;
  /** the latest answer from Redis is used for local admission for at most this long; default 1000 ms */
  localViewMs?: number;
  /**
   * What nobody waits for, calls admitted locally and calls that ended, goes to Redis at most this long
   * later, together (one script call per account and window instead of one per call); default 20 ms. Before
   * a call that Redis decides, all of it goes at once, so Redis always decides on everything this replica knows.
   * Why 20: at a few hundred calls a second the calls seldom share a window of 5 ms, so each paid its own
   * acquire and release scripts (at 500 req/s, 16 Redis commands per call against 12.9 with 20 ms, Redis CPU
   * per call −17%); the lag it adds is small beside the 1 s a replica's view of Redis may be old (localViewMs).
   */
  syncMs?: number;
  /** a call admitted locally turned out to be past a limit (it was taken nonetheless; later calls pay for it) */
  onLocalOverrun?: () => void;
  onError?: (err: unknown) => void;
  clock?: () => number;
}

const lim = (n: number | null): number => n ?? 0;

/** Same key and account limits (the scripts take them once per run of one key's calls). */
const sameLimits = (
  a: { keyLimits: RateLimits; accountLimits: RateLimits },
  b: { keyLimits: RateLimits; accountLimits: RateLimits },
): boolean => sameRateLimits(a.keyLimits, b.keyLimits) && sameRateLimits(a.accountLimits, b.accountLimits);

function infoFrom(r: TopUpReply, kl: RateLimits, al: RateLimits): RateLimitInfo {
  return {
    requests: tighterLimit(
      kl.rpm,
      r.keyRpmRemaining,
      r.keyRpmResetMs,
      al.rpm,
      r.accountRpmRemaining,
      r.accountRpmResetMs,
    ),
    tokens: tighterLimit(
      kl.tpm,
      r.keyTpmRemaining,
      r.keyTpmResetMs,
      al.tpm,
      r.accountTpmRemaining,
      r.accountTpmResetMs,
    ),
  };
}

function denialFrom(r: TopUpReply, info: RateLimitInfo): RateLimitDenial {
  const { retryAfterMs, limit, remaining, scope, kind } = r;
  return { ok: false, retryAfterMs, limit, remaining, scope, kind, info };
}

/** Headers for a call admitted locally: what is left by the replica's reckoning. */
function localInfo(kl: RateLimits, k: Free, al: RateLimits, a: Free): RateLimitInfo {
  const reset = (limit: number | null, free: number) => (limit === null ? 0 : resetMsOf(limit, free));
  return {
    requests: tighterLimit(kl.rpm, k.rpm, reset(kl.rpm, k.rpm), al.rpm, a.rpm, reset(al.rpm, a.rpm)),
    tokens: tighterLimit(kl.tpm, k.tpm, reset(kl.tpm, k.tpm), al.tpm, a.tpm, reset(al.tpm, a.tpm)),
  };
}

interface PendingAcquire {
  keyBase: string;
  leaseId: string;
  req: RateLimitRequest;
  /** admitted locally: taken in Redis even past a limit */
  force: boolean;
}

interface PendingTopUp {
  grant: RedisGrantState;
  /** tokens to add to the key's and the account's tpm charge (each clamped as acquire's charge is) */
  kExtra: number;
  aExtra: number;
  now: number;
}

interface PendingRelease {
  grant: RedisGrantState;
  kDelta: number;
  aDelta: number;
  rpmDelta: number;
  now: number;
}

/** What a release needs to know about the call it ends. */
interface RedisGrantState {
  leaseId: string;
  keyBase: string;
  tag: string;
  keyLimits: RateLimits;
  accountLimits: RateLimits;
  /** the token estimate charged: acquire's, raised by a granted top-up */
  estimated: number;
  /** a call admitted locally: settles when Redis has taken it (true) or could not (false); null: taken already */
  taken: Promise<boolean> | null;
}

interface Lease {
  keyConc: string | null;
  accountConc: string | null;
}

/**
 * The distributed limiter: every replica shares the counters in Redis. A call far from its limits is
 * admitted locally (see Headroom) and taken in Redis within syncMs; any other call waits for Redis, which
 * takes the limits of one account's waiting calls of an event-loop turn in one EVALSHA. Calls that ended are
 * freed once per window, also one EVALSHA per account. All keys of one call carry the account's hash tag
 * ({acct:<id>}) so the scripts also run on Redis Cluster. The caller's `now` is the clock: replicas should
 * run NTP (skew of s ms shifts a limit by s ms).
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly prefix: string;
  private readonly leaseTtlMs: number;
  private readonly concurrencyRetryMs: number;
  private readonly fallback: RateLimiter;
  private readonly onError: (err: unknown) => void;
  private readonly clock: () => number;
  private readonly instance = randomBytes(6).toString("hex");
  private seq = 0;
  private readonly leases = new Map<string, Lease>();
  // eager: the caller overlaps the round trip with reading the body (see TurnBatcher)
  private readonly acquires = new TurnBatcher<PendingAcquire, AcquireReply>(
    (tag, calls) => this.sendAcquires(tag, calls),
    {
      eager: true,
    },
  );
  // Calls admitted locally are told to Redis once per window: nobody waits for them (see syncMs).
  private readonly localAcquires: TurnBatcher<PendingAcquire, AcquireReply>;
  private readonly releases: TurnBatcher<PendingRelease>;
  // eager as the acquires: the caller waits on a top-up before it goes upstream
  private readonly topUps = new TurnBatcher<PendingTopUp, TopUpReply>((tag, calls) => this.sendTopUps(tag, calls), {
    eager: true,
  });
  private readonly heartbeat: NodeJS.Timeout;
  private readonly headroom: Headroom;
  private readonly onLocalOverrun: () => void;
  /** calls admitted without waiting for Redis, and those of them Redis found past a limit */
  readonly local = { granted: 0, overrun: 0 };

  constructor(
    private readonly redis: Redis,
    options: RedisRateLimiterOptions = {},
  ) {
    this.prefix = options.prefix ?? "mg:rl:";
    this.leaseTtlMs = options.leaseTtlMs ?? 60_000;
    this.concurrencyRetryMs = options.concurrencyRetryMs ?? 1000;
    this.fallback = options.fallback ?? new MemoryRateLimiter({ concurrencyRetryMs: this.concurrencyRetryMs });
    this.onError = options.onError ?? (() => {});
    this.clock = options.clock ?? Date.now;
    const viewMs = options.localViewMs ?? 1000;
    this.headroom = new Headroom(options.localFreeShare ?? 0.5, viewMs);
    this.onLocalOverrun = options.onLocalOverrun ?? (() => {});
    const windowMs = options.syncMs ?? 20;
    // Corked like the releases: nobody waits on these, so they go out in the turn's one write to Redis (an
    // uncorked script call is a write syscall of its own, which profiles showed on every window).
    this.localAcquires = new TurnBatcher(
      (tag, calls) => {
        batchWritesThisTurn(this.redis);
        return this.sendAcquires(tag, calls);
      },
      { windowMs },
    );
    this.releases = new TurnBatcher((tag, calls) => this.sendReleases(tag, calls), { windowMs });
    // numberOfKeys left open: six keys per run of one key's calls
    redis.defineCommand("modelgateRlAcquire", { lua: ACQUIRE_LUA });
    // numberOfKeys left open: the account's three keys plus three per run of one key's calls
    redis.defineCommand("modelgateRlRelease", { lua: RELEASE_LUA });
    // numberOfKeys left open: one lease key per concurrency limit of the group
    redis.defineCommand("modelgateRlRenew", { lua: RENEW_LUA });
    // numberOfKeys left open: four keys per run of one key's calls
    redis.defineCommand("modelgateRlTopUp", { lua: TOPUP_LUA });
    this.heartbeat = setInterval(
      () => {
        void this.renewLeases();
        this.headroom.sweep(this.clock());
      },
      Math.max(1, Math.floor(this.leaseTtlMs / 3)),
    );
    this.heartbeat.unref();
  }

  async acquire(req: RateLimitRequest): Promise<AcquireResult> {
    const kl = req.keyLimits;
    const al = req.accountLimits;
    if (!hasAnyLimit(kl) && !hasAnyLimit(al)) return UNLIMITED_GRANT;
    const tag = `${this.prefix}{acct:${req.accountId}}:`;
    const keyBase = `${tag}k:${req.keyId}:`;
    const leaseId = `${this.instance}:${++this.seq}`;
    const state: RedisGrantState = {
      leaseId,
      keyBase,
      tag,
      keyLimits: kl,
      accountLimits: al,
      estimated: req.estimatedTokens,
      taken: null,
    };
    // Far from every limit, the call goes on now and Redis takes it on the way (forced); near one, Redis decides.
    const k = this.headroom.admit(keyBase, kl, req.estimatedTokens, req.now);
    const a = k === null ? null : this.headroom.admit(tag, al, req.estimatedTokens, req.now);
    this.headroom.sent(keyBase, kl, req.estimatedTokens);
    this.headroom.sent(tag, al, req.estimatedTokens);
    const local = k !== null && a !== null;
    const item = { keyBase, leaseId, req, force: local };
    // Redis must see the calls admitted locally and the calls that ended before one it decides, or it would
    // decide without them (and refuse a slot that is free, say).
    if (!local) {
      void this.localAcquires.flush();
      void this.releases.flush();
    }
    const answer = local ? this.localAcquires.add(tag, item) : this.acquires.add(tag, item);
    if (local) {
      this.local.granted++;
      state.taken = answer.then(
        (r) => {
          if (r.status === 2) {
            this.local.overrun++;
            this.onLocalOverrun();
          }
          return true;
        },
        (err: unknown) => {
          // Not counted in Redis: nothing to release there either.
          this.leases.delete(leaseId);
          this.onError(err);
          return false;
        },
      );
      this.holdLease(leaseId, keyBase, tag, kl, al);
      return new RedisGrant(this, localInfo(kl, k, al, a), state);
    }
    let r: AcquireReply;
    try {
      r = await answer;
    } catch (err) {
      this.onError(err);
      return this.fallback.acquire(req);
    }
    const info = infoFrom(r, kl, al);
    if (r.status !== 1) return denialFrom(r, info);
    this.holdLease(leaseId, keyBase, tag, kl, al);
    return new RedisGrant(this, info, state);
  }

  private holdLease(leaseId: string, keyBase: string, tag: string, kl: RateLimits, al: RateLimits): void {
    if (kl.concurrency === null && al.concurrency === null) return;
    this.leases.set(leaseId, {
      keyConc: kl.concurrency === null ? null : `${keyBase}conc`,
      accountConc: al.concurrency === null ? null : `${tag}a:conc`,
    });
  }

  /** One script call for the acquires of one account in this batch; one reply per call. */
  private async sendAcquires(tag: string, calls: PendingAcquire[]): Promise<AcquireReply[]> {
    const keys: string[] = [];
    const args: (string | number)[] = [this.leaseTtlMs, this.concurrencyRetryMs];
    let run: PendingAcquire | null = null;
    let countAt = 0;
    for (const call of calls) {
      const { keyBase, leaseId, req, force } = call;
      const kl = req.keyLimits;
      const al = req.accountLimits;
      if (run === null || run.keyBase !== keyBase || run.force !== force || !sameLimits(run.req, req)) {
        run = call;
        keys.push(`${keyBase}rpm`, `${keyBase}tpm`, `${keyBase}conc`, `${tag}a:rpm`, `${tag}a:tpm`, `${tag}a:conc`);
        args.push(
          force ? 1 : 0,
          lim(kl.rpm),
          lim(kl.tpm),
          lim(kl.concurrency),
          lim(al.rpm),
          lim(al.tpm),
          lim(al.concurrency),
          0,
        );
        countAt = args.length - 1;
      }
      (args[countAt] as number)++;
      args.push(req.now, req.estimatedTokens, leaseId);
    }
    let replies: AcquireReply[];
    try {
      replies = decodeAcquireReplies(await this.redis.modelgateRlAcquire(keys.length, ...keys, ...args), calls.length);
    } catch (err) {
      for (const { keyBase, req } of calls) {
        this.headroom.heard(keyBase, req.keyLimits, req.estimatedTokens, req.now, null);
        this.headroom.heard(tag, req.accountLimits, req.estimatedTokens, req.now, null);
      }
      throw err;
    }
    for (let i = 0; i < calls.length; i++) {
      const r = replies[i]!;
      const { keyBase, req } = calls[i]!;
      // What Redis reports left after this call (in arrival order, so the last call's answer is the latest).
      this.headroom.heard(keyBase, req.keyLimits, req.estimatedTokens, req.now, {
        rpm: r.keyRpmRemaining,
        tpm: r.keyTpmRemaining,
        conc: r.keyConcurrencyFree,
      });
      this.headroom.heard(tag, req.accountLimits, req.estimatedTokens, req.now, {
        rpm: r.accountRpmRemaining,
        tpm: r.accountTpmRemaining,
        conc: r.accountConcurrencyFree,
      });
    }
    return replies;
  }

  /**
   * @internal Raises a granted call's tpm charge to a larger estimate (RateLimitGrant.topUp): always decided
   * by Redis, after everything this replica has not told it yet (as for an acquire Redis decides). Null when
   * nothing was asked of Redis: no tpm limit moves, Redis never took the call, or Redis failed (the call is
   * already admitted and goes on; the difference goes uncounted, as a lost release correction would).
   */
  async topUp(g: RedisGrantState, estimatedTokens: number, now: number): Promise<TopUpResult | null> {
    if (estimatedTokens <= g.estimated) return null;
    const kl = g.keyLimits;
    const al = g.accountLimits;
    const kExtra = kl.tpm === null ? 0 : chargedUnits(kl.tpm, estimatedTokens) - chargedUnits(kl.tpm, g.estimated);
    const aExtra = al.tpm === null ? 0 : chargedUnits(al.tpm, estimatedTokens) - chargedUnits(al.tpm, g.estimated);
    if (kExtra === 0 && aExtra === 0) {
      g.estimated = estimatedTokens;
      return null;
    }
    // A call admitted locally is topped up only once Redis has taken it, and not at all if Redis never did.
    if (g.taken !== null) {
      void this.localAcquires.flush();
      if (!(await g.taken)) return null;
    }
    void this.localAcquires.flush();
    void this.releases.flush();
    let r: TopUpReply;
    try {
      r = await this.topUps.add(g.tag, { grant: g, kExtra, aExtra, now });
    } catch (err) {
      this.onError(err);
      return null;
    }
    const info = infoFrom(r, kl, al);
    if (r.status !== 1) return denialFrom(r, info);
    g.estimated = estimatedTokens;
    // Less is free than the last answer said: local admission must know (as for a call bigger than its estimate).
    this.headroom.charge(g.keyBase, kExtra);
    this.headroom.charge(g.tag, aExtra);
    return { ok: true, info };
  }

  /** One script call for the top-ups of one account in this batch; one reply per call. */
  private async sendTopUps(tag: string, calls: PendingTopUp[]): Promise<TopUpReply[]> {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    let run: RedisGrantState | null = null;
    let countAt = 0;
    for (const { grant: g, kExtra, aExtra, now } of calls) {
      if (run === null || run.keyBase !== g.keyBase || !sameLimits(run, g)) {
        run = g;
        keys.push(`${g.keyBase}rpm`, `${g.keyBase}tpm`, `${tag}a:rpm`, `${tag}a:tpm`);
        args.push(lim(g.keyLimits.rpm), lim(g.keyLimits.tpm), lim(g.accountLimits.rpm), lim(g.accountLimits.tpm), 0);
        countAt = args.length - 1;
      }
      (args[countAt] as number)++;
      args.push(now, kExtra, aExtra);
    }
    return decodeTopUpReplies(await this.redis.modelgateRlTopUp(keys.length, ...keys, ...args), calls.length);
  }

  /** @internal Queued for the end of the turn; a call with no lease and nothing to correct costs nothing. */
  release(grant: RedisGrantState, actual: number, now: number, cancel: boolean): Promise<void> {
    const held = this.leases.delete(grant.leaseId);
    const kDelta = grant.keyLimits.tpm === null ? 0 : actual - chargedUnits(grant.keyLimits.tpm, grant.estimated);
    const aDelta =
      grant.accountLimits.tpm === null ? 0 : actual - chargedUnits(grant.accountLimits.tpm, grant.estimated);
    const rpmDelta = cancel && (grant.keyLimits.rpm !== null || grant.accountLimits.rpm !== null) ? -1 : 0;
    // A call bigger than its estimate leaves less free than the last answer said: local admission must know.
    this.headroom.charge(grant.keyBase, kDelta);
    this.headroom.charge(grant.tag, aDelta);
    if (!held && kDelta === 0 && aDelta === 0 && rpmDelta === 0) return Promise.resolve();
    return this.releases.add(grant.tag, { grant, kDelta, aDelta, rpmDelta, now });
  }

  private async sendReleases(tag: string, calls: PendingRelease[]): Promise<void> {
    const keys: string[] = [`${tag}a:tpm`, `${tag}a:conc`, `${tag}a:rpm`];
    const args: (string | number)[] = [calls[calls.length - 1]!.now];
    let run: RedisGrantState | null = null;
    let countAt = 0;
    for (const { grant: g, kDelta, aDelta, rpmDelta } of calls) {
      if (run === null || run.keyBase !== g.keyBase || !sameLimits(run, g)) {
        run = g;
        keys.push(`${g.keyBase}tpm`, `${g.keyBase}conc`, `${g.keyBase}rpm`);
        args.push(lim(g.keyLimits.tpm), lim(g.accountLimits.tpm), lim(g.keyLimits.rpm), lim(g.accountLimits.rpm), 0);
        countAt = args.length - 1;
      }
      (args[countAt] as number)++;
      args.push(g.leaseId, kDelta, aDelta, rpmDelta);
    }
    try {
      batchWritesThisTurn(this.redis);
      await this.redis.modelgateRlRelease(keys.length, ...keys, ...args);
    } catch (err) {
      // The leases expire by themselves; the TPM corrections are lost, which errs by |actual − estimate| tokens.
      this.onError(err);
    }
  }

  /** Extends every lease this replica holds; runs on a timer, exposed for tests. */
  async renewLeases(): Promise<void> {
    if (this.leases.size === 0) return;
    const expiry = this.clock() + this.leaseTtlMs;
    // One script per account tag: keys of one script must share a hash slot on Redis Cluster.
    const byTag = new Map<string, { keys: string[]; ids: string[] }>();
    for (const [id, lease] of this.leases) {
      for (const key of [lease.keyConc, lease.accountConc]) {
        if (key === null) continue;
        const tag = key.slice(0, key.indexOf("}") + 1);
        let group = byTag.get(tag);
        if (group === undefined) byTag.set(tag, (group = { keys: [], ids: [] }));
        group.keys.push(key);
        group.ids.push(id);
      }
    }
    // Separate calls, not one pipeline: a cluster pipeline must stay within one slot. On a single server the
    // turn's cork still sends them in one write.
    batchWritesThisTurn(this.redis);
    try {
      await Promise.all(
        [...byTag.values()].map(({ keys, ids }) => this.redis.modelgateRlRenew(keys.length, ...keys, expiry, ...ids)),
      );
    } catch (err) {
      this.onError(err);
    }
  }

  /** Stops renewing; leases still held expire after the lease TTL. Does not close the Redis connection. */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.localAcquires.flush();
    await this.acquires.flush();
    await this.topUps.flush();
    await this.releases.flush();
    await this.fallback.close();
  }
}

class RedisGrant implements RateLimitGrant {
  readonly ok = true as const;
  private released = false;
  /** a top-up on its way: the call ends after it, so its release corrects against the estimate it settled on */
  private toppingUp: Promise<unknown> | null = null;
  constructor(
    private readonly limiter: RedisRateLimiter,
    public info: RateLimitInfo,
    private readonly state: RedisGrantState,
  ) {}

  topUp(estimatedTokens: number, now: number = Date.now()): Promise<TopUpResult> {
    if (this.released || estimatedTokens <= this.state.estimated) return Promise.resolve({ ok: true, info: this.info });
    // Sent at once (a call after it in this turn is decided after it), or after the top-up before it.
    const p =
      this.toppingUp === null
        ? this.limiter.topUp(this.state, estimatedTokens, now)
        : this.toppingUp.then(() => this.limiter.topUp(this.state, estimatedTokens, now));
    this.toppingUp = p.then(
      () => undefined,
      () => undefined,
    );
    return p.then((r): TopUpResult => {
      if (r === null) return { ok: true, info: this.info };
      if (r.ok) this.info = r.info;
      return r;
    });
  }

  release(actualTokens: number, now: number = Date.now()): Promise<void> {
    return this.end(actualTokens, now, false);
  }

  cancel(now: number = Date.now()): Promise<void> {
    return this.end(0, now, true);
  }

  private end(actualTokens: number, now: number, cancel: boolean): Promise<void> {
    if (this.released) return Promise.resolve();
    this.released = true;
    if (this.toppingUp !== null) return this.toppingUp.then(() => this.settle(actualTokens, now, cancel));
    return this.settle(actualTokens, now, cancel);
  }

  private settle(actualTokens: number, now: number, cancel: boolean): Promise<void> {
    const taken = this.state.taken;
    // A call admitted locally is freed only once Redis has taken it, and not at all if Redis never did.
    if (taken === null) return this.limiter.release(this.state, actualTokens, now, cancel);
    return taken.then((ok) => (ok ? this.limiter.release(this.state, actualTokens, now, cancel) : undefined));
  }
}
