// A circuit breaker per upstream, so a dead upstream costs one probe per cool-down instead of a connect
// timeout on every request, and failover moves on at once.
//
//   closed ──(N consecutive failures, or error rate ≥ R over the window with ≥ M calls)──▶ open
//   open ──(cool-down elapsed)──▶ half-open: exactly one probe call is let through
//   half-open ──probe succeeds──▶ closed      half-open ──probe fails──▶ open (a new cool-down)
//
// Calls hold a ticket (the breaker's generation when they started); an outcome from an older generation is
// ignored, so a slow call that began before the breaker opened cannot close it again or re-open it.

export type BreakerState = "closed" | "open" | "half_open";

export interface BreakerOptions {
  /** consecutive failures that open the breaker; default 5 */
  consecutiveFailures?: number;
  /** error rate (0..1) over the window that opens it; default 0.5 */
  errorRate?: number;
  /** calls the window needs before the error rate counts; default 20 */
  minCalls?: number;
  /** error-rate window; default 30 s, kept in 10 buckets */
  windowMs?: number;
  /** how long the breaker stays open before a probe; default 30 s */
  openMs?: number;
  /** a probe that reports nothing for this long is presumed lost and another may start; default openMs */
  probeTimeoutMs?: number;
}

const BUCKETS = 10;
/** returned by acquire() when the call must not go to this upstream */
export const REFUSED = -1;

export class CircuitBreaker {
  private readonly consecutiveLimit: number;
  private readonly rateLimit: number;
  private readonly minCalls: number;
  private readonly bucketMs: number;
  private readonly openMs: number;
  private readonly probeTimeoutMs: number;

  private current: BreakerState = "closed";
  private generation = 0;
  private consecutive = 0;
  private openedAt = 0;
  private probeStartedAt = -1;
  // Ring of per-bucket counts; bucketStart[i] tells which time slot bucket i holds, so old ones read as empty.
  private readonly calls = new Uint32Array(BUCKETS);
  private readonly failures = new Uint32Array(BUCKETS);
  private readonly bucketStart = new Float64Array(BUCKETS).fill(-Infinity);

  constructor(options: BreakerOptions = {}) {
    this.consecutiveLimit = options.consecutiveFailures ?? 5;
    this.rateLimit = options.errorRate ?? 0.5;
    this.minCalls = options.minCalls ?? 20;
    this.bucketMs = (options.windowMs ?? 30_000) / BUCKETS;
    this.openMs = options.openMs ?? 30_000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? this.openMs;
  }

  state(now: number): BreakerState {
    if (this.current === "open" && now - this.openedAt >= this.openMs) {
      this.current = "half_open";
      this.generation++;
      this.probeStartedAt = -1;
    }
    return this.current;
  }

  /** A ticket for one call, or REFUSED when the breaker is open or its probe is already out. */
  acquire(now: number): number {
    const s = this.state(now);
    if (s === "closed") return this.generation;
    if (s === "open") return REFUSED;
    if (this.probeStartedAt >= 0 && now - this.probeStartedAt < this.probeTimeoutMs) return REFUSED;
    this.probeStartedAt = now;
    return this.generation;
  }

  /** Time until the next probe may start (0 when calls may go now). */
  retryAfterMs(now: number): number {
    const s = this.state(now);
    if (s === "open") return this.openedAt + this.openMs - now;
    if (s === "half_open" && this.probeStartedAt >= 0) {
      return Math.max(0, this.probeStartedAt + this.probeTimeoutMs - now);
    }
    return 0;
  }

  success(ticket: number, now: number): void {
    if (ticket !== this.generation) return;
    if (this.current === "half_open") {
      this.close();
      return;
    }
    if (this.current !== "closed") return;
    this.consecutive = 0;
    this.record(now, false);
  }

  failure(ticket: number, now: number): void {
    if (ticket !== this.generation) return;
    if (this.current === "half_open") {
      this.open(now);
      return;
    }
    if (this.current !== "closed") return;
    this.consecutive++;
    this.record(now, true);
    if (this.consecutive >= this.consecutiveLimit || this.rateExceeded(now)) this.open(now);
  }

  /** The call ended without a verdict on the upstream (the client went away): frees a probe slot. */
  cancel(ticket: number): void {
    if (ticket === this.generation && this.current === "half_open") this.probeStartedAt = -1;
  }

  private open(now: number): void {
    this.current = "open";
    this.generation++;
    this.openedAt = now;
    this.probeStartedAt = -1;
  }

  private close(): void {
    this.current = "closed";
    this.generation++;
    this.consecutive = 0;
    this.calls.fill(0);
    this.failures.fill(0);
    this.bucketStart.fill(-Infinity);
  }

  private record(now: number, failed: boolean): void {
    const slot = Math.floor(now / this.bucketMs);
    const i = slot % BUCKETS;
    if (this.bucketStart[i] !== slot) {
      this.bucketStart[i] = slot;
      this.calls[i] = 0;
      this.failures[i] = 0;
    }
    this.calls[i]!++;
    if (failed) this.failures[i]!++;
  }

  private rateExceeded(now: number): boolean {
    const oldest = Math.floor(now / this.bucketMs) - BUCKETS + 1;
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.bucketStart[i]! >= oldest) {
        calls += this.calls[i]!;
        failures += this.failures[i]!;
      }
    }
    return calls >= this.minCalls && failures >= this.rateLimit * calls;
  }
}

/** What a failure says about the upstream: it could not be reached at all, or it answered badly. */
export type FailureKind = "connect" | "response";

export interface RegistryOptions extends BreakerOptions {
  /**
   * A failure that may be the request's doing (a 5xx, a timeout, a broken stream) counts against the breaker
   * shared by every account only while at least this many accounts have failed on the upstream within the
   * window; default 2. Connect errors are the upstream's alone and always count.
   */
  minAccounts?: number;
  /** per-account breakers kept per upstream (the least recently created go first); default 10,000 */
  maxAccounts?: number;
}

/** One call's hold on its upstream's shared breaker and its account's own; report exactly one outcome. */
export class BreakerTicket {
  constructor(
    private readonly upstream: UpstreamBreakers,
    private readonly accountId: string,
    private readonly own: CircuitBreaker,
    private readonly ownTicket: number,
    private readonly sharedTicket: number,
  ) {}

  success(now: number): void {
    this.own.success(this.ownTicket, now);
    this.upstream.shared.success(this.sharedTicket, now);
  }

  failure(now: number, kind: FailureKind): void {
    this.own.failure(this.ownTicket, now);
    this.upstream.sharedFailure(this.sharedTicket, now, this.accountId, kind);
  }

  /** No verdict on the upstream (the client left, or the fault was the gateway's own). */
  cancel(): void {
    this.own.cancel(this.ownTicket);
    this.upstream.shared.cancel(this.sharedTicket);
  }
}

/**
 * An upstream's breakers. The shared one serves every account, so evidence from one account alone never
 * opens it: that account's failures open its own breaker (its calls to this upstream wait; nobody else's
 * do), and count against the shared one only when other accounts fail too, or when the upstream cannot be
 * reached at all.
 */
class UpstreamBreakers {
  readonly shared: CircuitBreaker;
  private readonly perAccount = new Map<string, CircuitBreaker>();
  /** account → when it last failed here */
  private readonly failing = new Map<string, number>();
  private readonly windowMs: number;
  private readonly minAccounts: number;
  private readonly maxAccounts: number;

  constructor(private readonly options: RegistryOptions) {
    this.shared = new CircuitBreaker(options);
    this.windowMs = options.windowMs ?? 30_000;
    this.minAccounts = options.minAccounts ?? 2;
    this.maxAccounts = options.maxAccounts ?? 10_000;
  }

  acquire(accountId: string, now: number): BreakerTicket | null {
    let own = this.perAccount.get(accountId);
    if (own === undefined) {
      own = new CircuitBreaker(this.options);
      this.perAccount.set(accountId, own);
      if (this.perAccount.size > this.maxAccounts) this.perAccount.delete(this.perAccount.keys().next().value!);
    }
    const ownTicket = own.acquire(now);
    if (ownTicket === REFUSED) return null;
    const sharedTicket = this.shared.acquire(now);
    if (sharedTicket === REFUSED) {
      own.cancel(ownTicket);
      return null;
    }
    return new BreakerTicket(this, accountId, own, ownTicket, sharedTicket);
  }

  sharedFailure(ticket: number, now: number, accountId: string, kind: FailureKind): void {
    for (const [account, at] of this.failing) if (at < now - this.windowMs) this.failing.delete(account);
    this.failing.delete(accountId); // re-inserted last: the map stays in time order
    this.failing.set(accountId, now);
    if (this.failing.size > this.maxAccounts) this.failing.delete(this.failing.keys().next().value!);
    if (kind === "connect" || this.failing.size >= this.minAccounts) this.shared.failure(ticket, now);
    else this.shared.cancel(ticket);
  }
}

/** Breakers per upstream name (shared by all accounts, plus one per account), created on first use. */
export class BreakerRegistry {
  private readonly upstreams = new Map<string, UpstreamBreakers>();
  constructor(private readonly options: RegistryOptions = {}) {}

  /** The upstream's shared breaker (for tests and states). */
  get(upstream: string): CircuitBreaker {
    return this.of(upstream).shared;
  }

  /** A ticket for one call of `accountId` to `upstream`, or null when a breaker refuses it. */
  acquire(upstream: string, accountId: string, now: number): BreakerTicket | null {
    return this.of(upstream).acquire(accountId, now);
  }

  private of(upstream: string): UpstreamBreakers {
    let b = this.upstreams.get(upstream);
    if (b === undefined) {
      b = new UpstreamBreakers(this.options);
      this.upstreams.set(upstream, b);
    }
    return b;
  }

  /** The shared breakers' states, for /readyz and metrics. */
  states(now: number): Record<string, BreakerState> {
    const out: Record<string, BreakerState> = {};
    for (const [name, b] of this.upstreams) out[name] = b.shared.state(now);
    return out;
  }
}
