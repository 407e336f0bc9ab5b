// The health of pooled upstream keys as this data plane sees it: a key is disabled (401/403: the provider
// refuses it; 402 or insufficient_quota: its money is gone) until an operator enables it again, or resting
// (429) until its retry-after has passed; and what its rate-limit headers say is left (rate-headers.ts).
//
// One process (embedded mode) keeps this in memory. Replicas (RedisKeyHealth) also write each disable and rest
// to one Redis hash and announce it on a channel; every replica reads the hash again when it hears of a change,
// so a key one replica saw refused leaves the others' rotation within a round trip or two. They also read it
// every MODELGATE_KEY_STATE_POLL_MS (1 s), in case a message was missed (a subscription lost with its
// connection): the bound is then a second. Disables also go on a Redis list the control plane reads (it persists
// the state, audits it and alerts the operators). The control plane clears a key's entry when an operator enables
// it, and announces that too.
//
// Why a channel and a slower poll rather than the 250 ms poll alone: a change now reaches the other replicas at
// once (the key-pool test measured 131 ms with the poll), and the polls were 4 reads a second per replica and 5
// for the control plane of a hash that changes when a provider refuses a key (bench's idle scenario, alternated
// twice: the control plane 7.3–7.5 → 5.3–6.0 ms of CPU a second, a replica's change within the run-to-run noise).

import type { Redis } from "ioredis";
import { subscribeWhenReady } from "../../redis/connect.ts";
import { singleFlight } from "../../redis/single-flight.ts";
import { headroomFactor, rateHeadroom } from "./rate-headers.ts";

export type KeyReason = "unauthorized" | "forbidden" | "payment_required" | "insufficient_quota";

/** A key's state in the shared hash (and in memory): disabled with a reason, or resting until a time. */
export interface KeyEntry {
  /** disabled: why */
  reason?: KeyReason;
  /** resting until (epoch ms) */
  until?: number;
  /** when this was decided */
  at: number;
}

/** A disable for the control plane: which upstream and key, why, when. */
export interface KeyDisabled {
  upstream: string;
  key: string;
  reason: KeyReason;
  at: number;
}

export const keyField = (upstream: string, key: string): string => `${upstream}\u0000${key}`;

export class KeyHealth {
  protected readonly entries = new Map<string, KeyEntry>();
  private readonly headroom = new Map<string, { factor: number; at: number }>();

  private readonly listeners: ((d: KeyDisabled) => void)[] = [];

  constructor(onDisabled?: (d: KeyDisabled) => void) {
    if (onDisabled) this.listeners.push(onDisabled);
  }

  /** Also tell `listener` of every key this process disables (embedded mode: the control plane records it). */
  onDisable(listener: (d: KeyDisabled) => void): void {
    this.listeners.push(listener);
  }

  /** Whether the key may be used now (not disabled, not resting). */
  usable(field: string, now: number): boolean {
    const e = this.entries.get(field);
    if (e === undefined) return true;
    if (e.reason !== undefined) return false;
    return e.until === undefined || e.until <= now;
  }

  /** The key's weight as it stands: its configured one, less when its rate limit is nearly used up. */
  weight(field: string, configured: number, now: number): number {
    const h = this.headroom.get(field);
    // A figure older than a minute says nothing of the limit's current window.
    if (h === undefined || now - h.at > 60_000) return configured;
    return configured * h.factor;
  }

  /** The provider refused the key for good (until an operator says otherwise). */
  disable(upstream: string, key: string, reason: KeyReason, now: number): void {
    const field = keyField(upstream, key);
    if (this.entries.get(field)?.reason !== undefined) return;
    const entry: KeyEntry = { reason, at: now };
    const disabled: KeyDisabled = { upstream, key, reason, at: now };
    this.entries.set(field, entry);
    this.write(field, entry, disabled);
    for (const l of this.listeners) l(disabled);
  }

  /** The key is rate limited until `until`. */
  rest(upstream: string, key: string, until: number, now: number): void {
    const field = keyField(upstream, key);
    const e = this.entries.get(field);
    if (e?.reason !== undefined || (e?.until ?? 0) >= until) return;
    const entry: KeyEntry = { until, at: now };
    this.entries.set(field, entry);
    this.write(field, entry);
  }

  /** An operator enabled the key again: forget its disable and rest. */
  enable(upstream: string, key: string): void {
    this.entries.delete(keyField(upstream, key));
  }

  /** Reads an answer's rate-limit headers for the key. */
  learn(field: string, headers: Record<string, string | string[] | undefined>, now: number): void {
    const h = rateHeadroom(headers);
    if (h !== null) this.headroom.set(field, { factor: headroomFactor(h), at: now });
  }

  /** The keys' states this process knows (disabled or resting now), for reports and tests. */
  states(now: number): Record<string, KeyEntry> {
    const out: Record<string, KeyEntry> = {};
    for (const [f, e] of this.entries) if (e.reason !== undefined || (e.until ?? 0) > now) out[f] = e;
    return out;
  }

  /** Shares a state this process decided (`disabled`: it is a disable, for the control plane's record). */
  protected write(_field: string, _entry: KeyEntry, _disabled?: KeyDisabled): void {}

  async close(): Promise<void> {}
}

export interface RedisKeyHealthNames {
  /** the hash of key states (field: upstream NUL key, value: a KeyEntry as JSON) */
  keyStates: string;
  /** the list of disables for the control plane (KeyDisabled as JSON) */
  keyEvents: string;
  /** where a change of the hash is announced (message: the field) */
  keyStatesChannel: string;
}

/** KeyHealth shared by replicas through Redis (see the top of this file). */
export class RedisKeyHealth extends KeyHealth {
  /** entries written here and perhaps not yet in Redis: kept over a poll that does not have them yet */
  private readonly pending = new Map<string, KeyEntry>();
  private readonly timer: NodeJS.Timeout;
  private readonly onMessage = (channel: string) => {
    if (channel === this.names.keyStatesChannel) void this.poll();
  };

  /**
   * `subscriber`: a connection in subscriber mode (the replica's policy subscriber); without it, changes are seen
   * at the next poll only.
   */
  constructor(
    private readonly redis: Redis,
    private readonly names: RedisKeyHealthNames,
    pollMs: number,
    private readonly onError: (err: unknown) => void,
    private readonly subscriber?: Redis,
  ) {
    super();
    this.timer = setInterval(() => void this.poll(), pollMs);
    this.timer.unref();
    if (subscriber) {
      subscriber.on("message", this.onMessage);
      // a read once subscribed; after a reconnect (ioredis subscribes again) the timed read catches what the gap
      // missed
      subscribeWhenReady(subscriber, names.keyStatesChannel).then(() => this.poll(), this.onError);
    }
    void this.poll();
  }

  protected override write(field: string, entry: KeyEntry, disabled?: KeyDisabled): void {
    this.pending.set(field, entry);
    // The hash and the control plane's list first, then the announcement: whoever hears it reads them new.
    const p = this.redis.pipeline().hset(this.names.keyStates, field, JSON.stringify(entry));
    if (disabled) p.rpush(this.names.keyEvents, JSON.stringify(disabled));
    p.publish(this.names.keyStatesChannel, field)
      .exec()
      .then((results) => {
        const err = results?.find(([e]) => e !== null)?.[0];
        if (err) this.onError(err);
      }, this.onError)
      .finally(() => {
        if (this.pending.get(field) === entry) this.pending.delete(field);
      });
  }

  /**
   * Replaces the local view with the shared one (plus what this replica wrote that is still on its way). A call
   * while a read runs makes it read once more when done (the change it was told of may have come after the read).
   */
  poll(): Promise<void> {
    // Not before the connection is ready (the first poll runs at construction, while it connects): with no
    // offline queue that poll failed at every start-up and opened a Redis outage in the log that was none. An
    // outage proper is reported by the connection's own errors.
    return this.redis.status === "ready" ? this.reads() : Promise.resolve();
  }
  private readonly reads = singleFlight(
    () => this.read(),
    () => this.redis.status === "ready",
  );

  private async read(): Promise<void> {
    try {
      const all = await this.redis.hgetall(this.names.keyStates);
      const now = Date.now();
      const next = new Map<string, KeyEntry>();
      const expired: string[] = [];
      for (const [field, json] of Object.entries(all)) {
        let e: KeyEntry;
        try {
          e = JSON.parse(json) as KeyEntry;
        } catch {
          continue;
        }
        // A rest long over is litter: the next replica to see it removes it.
        if (e.reason === undefined && (e.until ?? 0) < now - 60_000) expired.push(field);
        else next.set(field, e);
      }
      for (const [f, e] of this.pending) next.set(f, e);
      this.entries.clear();
      for (const [f, e] of next) this.entries.set(f, e);
      if (expired.length > 0) await this.redis.hdel(this.names.keyStates, ...expired);
    } catch (err) {
      this.onError(err);
    }
  }

  override async close(): Promise<void> {
    clearInterval(this.timer);
    this.subscriber?.off("message", this.onMessage);
  }
}
