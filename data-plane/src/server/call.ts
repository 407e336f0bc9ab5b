import { GatewayError } from "../errors.ts";
import type { CanonicalStreamEvent, Usage } from "../protocols/index.ts";
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

  firstByte(): void {
    if (this.record.firstByteAt !== null) return;
    this.record.firstByteAt = Date.now();
    this.opts.metrics.firstByte(this.record.protocol, (this.record.firstByteAt - this.record.startedAt) / 1000);
  }

  setUsage(u: Usage): void {
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
    if (this.usageComplete && this.usage !== null) return { usage: this.usage, estimated: false };
    const u = this.usage ?? { ...zeroUsage(), promptTokens: this.admission.estimatedPromptTokens };
    return {
      usage: { ...u, completionTokens: Math.max(u.completionTokens, tokensFromChars(this.deliveredChars)) },
      estimated: true,
    };
  }

  /**
   * Accounts the call. A failed call is never charged; a stream cut off after delivering output is charged
   * for what was delivered (by estimate unless the upstream's final count is known, see cut).
   */
  finish(status: number, errorCode: string | null = null): Promise<void> | void {
    if (this.finished) return this.settleExact();
    this.finished = true;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer); // a non-streamed call the client left: answered
    this.drainTimer = null;
    const ok = status >= 200 && status < 300;
    const { usage, estimated } = this.billedUsage();
    // A non-streamed answer read to its end after the client left is charged: the upstream did the work.
    const answered = this.clientGone && this.record.firstByteAt !== null;
    const charge =
      ok || answered || (this.record.firstByteAt !== null && (usage.completionTokens > 0 || this.deliveredChars > 0));
    const event = usageEvent(this.record, usage, this.admission.price, status, errorCode, charge, estimated);
    const durable = this.opts.usage.emit(event);
    const cost = BigInt(event.cost);
    // The hold the call took at admission goes and its cost comes in one step (billing/reservation.ts).
    const held = this.admission.reservation;
    const spent = held !== undefined ? this.addSpend(cost, held) : cost !== 0n ? this.addSpend(cost) : undefined;
    if (estimated && charge && status === 499) this.estimatedCharge = cost;
    void this.admission.grant.release(usage.promptTokens + usage.completionTokens);
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
    // The relays send the answer's last byte once this resolves: the event is in Redis or the spool, and the
    // spend counters hold the call's cost, so the caller's next request already sees its quota and balance
    // (both go out in the same turn's write to Redis, so waiting for the second costs nothing more).
    return spent === undefined ? durable : Promise.all([durable, spent]).then(() => undefined);
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
    this.drainTimer = setTimeout(stop, this.opts.cutStreamDrainMs ?? CUT_STREAM_DRAIN_MS);
    this.drainTimer.unref();
  }

  /**
   * The client left a non-streamed call before its answer. The upstream has the request and bills for it, so
   * its answer is still awaited (at most the drain time, then `stop` aborts it) and, when it comes, the call
   * is charged from its usage (by estimate, flagged, when it reports none): one usage event, status 499. An
   * upstream that fails meanwhile is not retried, and the call costs nothing, as any failed call.
   */
  leave(stop: () => void): void {
    if (this.finished || this.clientGone) {
      if (this.finished) stop();
      return;
    }
    this.clientGone = true;
    this.drainTimer = setTimeout(stop, this.opts.cutStreamDrainMs ?? CUT_STREAM_DRAIN_MS);
    this.drainTimer.unref();
  }

  /** After a cut: the upstream finished, so its exact usage replaces the estimate (once). */
  private settleExact(): Promise<void> | void {
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    const before = this.estimatedCharge;
    this.estimatedCharge = null;
    if (before === null || !this.usageComplete || this.usage === null) return;
    const event = usageEvent(this.record, this.usage, this.admission.price, 499, "client_closed", true, false);
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
