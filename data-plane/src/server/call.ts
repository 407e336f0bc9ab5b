import { GatewayError } from "../errors.ts";
import type { CanonicalStreamEvent, Usage } from "../protocols/index.ts";
import { usableUsage } from "../protocols/shared.ts";
import { type CallRecord, type TokenUsage, tokensFromChars, usageEvent, zeroUsage } from "../usage/record.ts";
import type { Reservation } from "../billing/reservation.ts";
import type { Admission, Caller } from "./admission.ts";
import type { CallTrace } from "../telemetry/call-trace.ts";
import type { DataPlaneOptions } from "./context.ts";

/**
 * One admitted call from the moment it goes upstream until it is accounted: the usage the upstream reported
 * (or the text it delivered, when it reported none), and exactly one usage event, spend update and
 * rate-limit release at the end, whatever way it ends.
 */
/** How long a stream the client left is still read, for the upstream's exact usage (DataPlaneOptions overrides). */
export const CUT_STREAM_DRAIN_MS = 30_000;

export class Call {
  /** the latest usage the upstream reported (cumulative; possibly partial until the answer is complete) */
  usage: TokenUsage | null = null;
  /** the upstream's answer ended normally, so `usage` is its final count */
  usageComplete = false;
  /** characters of output delivered to the client, for counting when the upstream reports no usage */
  deliveredChars = 0;
  /** the relay is streaming the answer: a client leaving now cuts the stream (see cut) */
  streaming = false;
  /** the client left a non-streamed call before its answer; the upstream's answer is still awaited (see leave) */
  clientGone = false;
  /**
   * The upstream took the whole request and its status line came (a 2xx): it has processed the prompt, so
   * the call is charged at least the prompt's estimate however it ends (client gone, stream broken, an
   * answer over the gateway's limits).
   */
  private upstreamAnswered = false;
  /** what aborts the upstream call once the client left (see leave) */
  private stopLeft: (() => void) | null = null;
  /** the upstream's latest usage report could not be read (see setUsage): the call is billed by estimate */
  private usageMalformed = false;
  private finished = false;
  /** the cost charged by estimate when the client cut the stream; the exact usage replaces it once */
  private estimatedCharge: bigint | null = null;
  private drainTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly opts: DataPlaneOptions,
    readonly caller: Caller,
    readonly admission: Admission,
    readonly record: CallRecord,
    /** the call's trace, when tracing is on */
    readonly trace: CallTrace | null = null,
  ) {}

  /** The upstream's status line came (a 2xx): from now on the call is charged (see upstreamAnswered). */
  answered(): void {
    this.upstreamAnswered = true;
    // A client that left before it: the answer is read from now on, for at most the drain time.
    if (this.stopLeft !== null && !this.finished) this.startDrain(this.stopLeft);
  }

  firstByte(): void {
    if (this.record.firstByteAt !== null) return;
    this.record.firstByteAt = Date.now();
    this.opts.metrics.firstByte(this.record.protocol, (this.record.firstByteAt - this.record.startedAt) / 1000);
  }

  /**
   * Takes the upstream's latest usage report. One with a count that is not a non-negative safe integer
   * (protocols/shared.ts, count) is not taken: the last readable report stays as the partial count, and the
   * call is billed by estimate unless a readable report follows.
   */
  setUsage(u: Usage): void {
    if (!usableUsage(u)) {
      this.usageMalformed = true;
      return;
    }
    this.usageMalformed = false;
    this.usage = {
      promptTokens: u.promptTokens,
      completionTokens: u.completionTokens,
      reasoningTokens: u.reasoningTokens,
      cachedTokens: u.cachedTokens,
      cacheWrite5mTokens: u.cacheWrite5mTokens ?? 0,
      cacheWrite1hTokens: u.cacheWrite1hTokens ?? 0,
    };
  }

  /** Reads what a canonical stream event says about usage and delivered output. */
  observe(ev: CanonicalStreamEvent): void {
    switch (ev.type) {
      case "text":
      case "thinking":
        this.deliveredChars += ev.text.length;
        break;
      case "tool_call_delta":
        this.deliveredChars += ev.arguments.length;
        break;
      case "usage":
        this.setUsage(ev.usage);
        break;
      case "start":
        if (ev.usage) this.setUsage(ev.usage);
        break;
    }
  }

  /**
   * The usage to bill and whether it is the gateway's estimate. Exact when the upstream's answer ended normally
   * with a count. Otherwise (a stream cut short, an upstream that reported nothing) what the upstream did
   * report is kept (Anthropic reports the prompt and its cache classes up front) and completed by the
   * gateway's count: the prompt from the request's size, the output from the delivered characters, whichever
   * is larger than the upstream's partial count.
   */
  private billedUsage(): { usage: TokenUsage; estimated: boolean } {
    // A final count of a 0-token prompt is no count: every request has a prompt.
    if (this.usageComplete && this.usage !== null && !this.usageMalformed && this.usage.promptTokens > 0)
      return { usage: this.usage, estimated: false };
    const u = this.usage ?? { ...zeroUsage(), promptTokens: this.admission.estimatedPromptTokens };
    return {
      usage: { ...u, completionTokens: Math.max(u.completionTokens, tokensFromChars(this.deliveredChars)) },
      estimated: true,
    };
  }

  /**
   * Accounts the call. A call the upstream never answered (refused, failed, or the client left before its
   * status line) is not charged; once the upstream answered (upstreamAnswered) it is, however it ends: by
   * the upstream's count when its answer ended normally with one, else by estimate (see billedUsage and cut).
   */
  finish(status: number, errorCode: string | null = null): Promise<void> | void {
    if (this.finished) return this.settleExact();
    this.finished = true;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer); // a non-streamed call the client left: answered
    this.drainTimer = null;
    const billed = this.billedUsage();
    try {
      return this.account(status, errorCode, billed.usage, billed.estimated);
    } finally {
      // Whatever threw while accounting, the key's concurrency slot and tokens are given back: a call that
      // held its slot forever locked out a key with concurrency 1.
      void this.admission.grant.release(billed.usage.promptTokens + billed.usage.completionTokens);
    }
  }

  private account(
    status: number,
    errorCode: string | null,
    usage: TokenUsage,
    estimated: boolean,
  ): Promise<void> | void {
    const ok = status >= 200 && status < 300;
    // The upstream processed the prompt once it answered: the call costs at least that, whoever left.
    const charge = ok || this.upstreamAnswered;
    const event = usageEvent(this.record, usage, this.admission.price, status, errorCode, charge, estimated);
    const durable = this.opts.usage.emit(event);
    const cost = BigInt(event.cost);
    // The hold the call took at admission goes and its cost comes in one step (billing/reservation.ts).
    const held = this.admission.reservation;
    if (held !== undefined) void this.addSpend(cost, held);
    else if (cost !== 0n) void this.addSpend(cost);
    if (estimated && charge && status === 499) this.estimatedCharge = cost;
    this.opts.metrics.call(
      this.record.protocol,
      this.record.model,
      status,
      this.record.stream,
      event.latencyMs / 1000,
      usage.promptTokens,
      usage.completionTokens,
    );
    this.trace?.finish(status, errorCode, usage);
    // The relays send the answer's last byte once this resolves: the event is in Redis or the spool. The spend
    // counters took the call's cost already (this replica counts it at once, so the caller's next request here
    // sees its quota and balance; Redis gets it within the add window, billing/spend-redis.ts), so the answer
    // does not wait for their round trip.
    return durable;
  }

  /**
   * The client left a stream midway. It is charged now, by estimate unless the upstream's final count is
   * known, and the upstream is still read to its end (at most the drain time, then `stop` aborts it): when
   * its exact usage arrives, a second event for the same request replaces the estimate, once (the control
   * plane settles the difference). The estimate is durable first, so a replica lost meanwhile still bills.
   */
  cut(stop: () => void): void {
    if (this.finished) {
      stop();
      return;
    }
    void this.finish(499, "client_closed");
    if (this.estimatedCharge === null) {
      stop();
      return;
    }
    this.startDrain(stop);
  }

  /**
   * The client left before the answer (a non-streamed call, or a stream before its status line). The upstream
   * has the request and bills for it, so its answer is still awaited: until its status line with no bound of
   * the gateway's own (the route's first-byte timeout bounds it, as for a client that stayed: aborting
   * earlier would let a client get a long prompt processed for free by leaving at once), then for at most the
   * drain time, after which `stop` aborts it. When the answer comes, the call is charged from its usage (by
   * estimate, flagged, when it reports none or the drain ended it): one usage event, status 499. An upstream
   * that fails before its status line is not retried, and the call costs nothing, as any failed call.
   */
  leave(stop: () => void): void {
    if (this.finished || this.clientGone) {
      if (this.finished) stop();
      return;
    }
    this.clientGone = true;
    this.stopLeft = stop;
    if (this.upstreamAnswered) this.startDrain(stop);
  }

  private startDrain(stop: () => void): void {
    if (this.drainTimer !== null) return;
    this.drainTimer = setTimeout(stop, this.opts.cutStreamDrainMs ?? CUT_STREAM_DRAIN_MS);
    this.drainTimer.unref();
  }

  /** After a cut: the upstream finished, so its exact usage replaces the estimate (once). */
  private settleExact(): Promise<void> | void {
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    const before = this.estimatedCharge;
    this.estimatedCharge = null;
    if (before === null) return;
    const { usage, estimated } = this.billedUsage();
    if (estimated) return;
    // the estimate's row is in the log (or on its way): settlement checks for it rather than inserting in bulk
    const event = {
      ...usageEvent(this.record, usage, this.admission.price, 499, "client_closed", true, false),
      maybeSettled: true,
    };
    const durable = this.opts.usage.emit(event);
    const delta = BigInt(event.cost) - before;
    if (delta !== 0n) void this.addSpend(delta);
    return durable;
  }

  /** Resolves once the counters took the cost (never rejects: a failure is logged and the call goes on). */
  private addSpend(cost: bigint, held?: Reservation): Promise<void> {
    const added =
      held !== undefined
        ? this.opts.spend.settle(held, cost)
        : this.opts.spend.add(this.caller.key, this.caller.account, cost);
    return added.then(
      () => undefined,
      (err: unknown) => this.opts.logger.warn({ err, requestId: this.record.requestId }, "spend counter not updated"),
    );
  }

  failed(err: unknown): void {
    const gw = err instanceof GatewayError ? err : null;
    this.finish(gw?.status ?? 500, gw?.code ?? "internal_error");
  }
}
