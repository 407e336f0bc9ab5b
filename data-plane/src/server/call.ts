import { GatewayError } from "../errors.ts";
import type { CanonicalStreamEvent, Usage } from "../protocols/index.ts";
import { type CallRecord, type TokenUsage, tokensFromChars, usageEvent, zeroUsage } from "../usage/record.ts";
import type { Admission, Caller } from "./admission.ts";
import type { CallTrace } from "../telemetry/call-trace.ts";
import type { DataPlaneOptions } from "./context.ts";

/**
 * One admitted call from the moment it goes upstream until it is accounted: the usage the upstream reported
 * (or the text it delivered, when it reported none), and exactly one usage event, spend update and
 * rate-limit release at the end, whatever way it ends.
 */
export class Call {
  usage: TokenUsage | null = null;
  /** characters of output delivered to the client, for counting when the upstream reports no usage */
  deliveredChars = 0;
  private finished = false;

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
    this.usage = { promptTokens: u.promptTokens, completionTokens: u.completionTokens, reasoningTokens: u.reasoningTokens, cachedTokens: u.cachedTokens };
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
   * Accounts the call. A failed call is never charged; a stream cut off after delivering output is charged
   * for what was delivered (the upstream's count when it sent one, else the gateway's).
   */
  finish(status: number, errorCode: string | null = null): Promise<void> | void {
    if (this.finished) return;
    this.finished = true;
    const ok = status >= 200 && status < 300;
    // No usage from the upstream (a stream cut short): count the prompt from the request and the delivered output.
    const usage = this.usage ?? { ...zeroUsage(), promptTokens: this.admission.estimatedPromptTokens, completionTokens: tokensFromChars(this.deliveredChars) };
    const charge = ok || (this.record.firstByteAt !== null && (usage.completionTokens > 0 || this.deliveredChars > 0));
    const event = usageEvent(this.record, usage, this.admission.price, status, errorCode, charge);
    const durable = this.opts.usage.emit(event);
    const cost = BigInt(event.cost);
    if (cost !== 0n) {
      this.opts.spend.add(this.caller.key, this.caller.account, cost).catch((err) => this.opts.logger.warn({ err, requestId: this.record.requestId }, "spend counter not updated"));
    }
    void this.admission.grant.release(usage.promptTokens + usage.completionTokens);
    this.opts.metrics.call(this.record.protocol, this.record.model, status, this.record.stream, event.latencyMs / 1000, usage.promptTokens, usage.completionTokens);
    this.trace?.finish(status, errorCode, usage);
    // The relays send the answer's last byte once this resolves (the event is in Redis or the spool).
    return durable;
  }

  failed(err: unknown): void {
    const gw = err instanceof GatewayError ? err : null;
    this.finish(gw?.status ?? 500, gw?.code ?? "internal_error");
  }
}
