import type { IncomingMessage, ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import type { ClientRoute, ProtocolAdapter } from "../protocols/index.ts";
import type { AcquireResult } from "../ratelimit/types.ts";
import type { CallTrace } from "../telemetry/call-trace.ts";
import type { CallAbort } from "../upstreams/call-abort.ts";
import { type Attribution, type CallRecord, tokensFromChars } from "../usage/record.ts";
import { type Caller, admit, cancelLimits, identify, startLimits } from "./admission.ts";
import { keyHashFrom } from "./auth.ts";
import { declaredLength, parseJsonObject, readBody } from "./body.ts";
import { Call } from "./call.ts";
import type { DataPlaneOptions } from "./context.ts";
import { sendError } from "./respond.ts";

/** A client-facing endpoint that goes upstream: the protocol it speaks and what its path said. */
export interface Endpoint {
  client: ProtocolAdapter;
  /** Gemini names the model (and streaming) in the URL */
  route?: ClientRoute;
  queryKey?: string | null;
}

/** What the endpoint admits the call for, besides its model (see admit in admission.ts). */
export interface AdmitFor {
  /** a chat endpoint refuses an embedding model, and the other way round */
  purpose: "chat" | "embedding";
  stream: boolean;
  /** the request's output cap (max_tokens …) */
  maxOutputTokens?: number;
  /** the fallbacks the request names (server/fallbacks.ts) */
  fallbacks?: readonly string[];
  attribution?: Attribution;
}

/**
 * One client call's way in, and its way out when anything fails, the same for every endpoint that goes
 * upstream (server/generate.ts, embeddings/handle.ts): the key (before the body is read, so a bad key costs
 * nothing) → the body, the rate limits started meanwhile when its size is declared → policy, model, limits and
 * money (admit) → the Call that accounts it → its routes → the client watched once upstream. On a failure at
 * any step: the limits a call refused before admission took are given back, the Call is accounted, the error
 * goes out in the client's protocol.
 */
export class CallEntry {
  readonly startedAt = Date.now();
  /** set once admitted: from then on the Call accounts the call however it ends */
  call: Call | null = null;
  private declared: number | null = null;
  private limits: Promise<AcquireResult> | undefined;
  private admitted = false;

  constructor(
    private readonly opts: DataPlaneOptions,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly requestId: string,
    private readonly ep: Endpoint,
    private readonly trace: CallTrace | null = null,
  ) {}

  /** The key's caller (or 401), then the body, read and parsed as a JSON object. */
  async read(): Promise<{ caller: Caller; raw: Buffer; body: Record<string, unknown> }> {
    const { opts, req, ep } = this;
    const caller = identify(opts, keyHashFrom(req.headers, ep.client.keySources, ep.queryKey), req);
    // With the size declared, the limits are taken while the body is read and parsed (the estimate is the
    // same either way: a quarter of the body's bytes).
    const declared = declaredLength(req, opts.maxBodyBytes);
    this.declared = declared;
    if (declared !== null) this.limits = startLimits(opts, caller, tokensFromChars(declared), this.startedAt);
    const raw = await readBody(req, opts.maxBodyBytes);
    return { caller, raw, body: parseJsonObject(raw) };
  }

  /**
   * Admits the call for `model` (the limits started by read, or taken now on `bodyBytes`, the body's size as it
   * goes upstream) and opens the Call that accounts it.
   */
  async admit(caller: Caller, model: string, bodyBytes: number, what: AdmitFor): Promise<Call> {
    const { opts } = this;
    const limitsSpan = this.trace?.limits();
    const admitting = admit(
      opts,
      caller,
      model,
      tokensFromChars(this.declared ?? bodyBytes),
      this.startedAt,
      this.limits,
      what.purpose,
      what.maxOutputTokens,
      what.fallbacks,
    );
    // Untraced calls skip the .finally: its closure and two promises were per-call garbage for nothing.
    const admission = await (limitsSpan === undefined ? admitting : admitting.finally(() => limitsSpan.end()));
    this.admitted = true;
    const record: CallRecord = {
      requestId: this.requestId,
      keyId: caller.key.id,
      accountId: caller.account.id,
      model: admission.model.id,
      protocol: this.ep.client.name,
      upstream: null,
      stream: what.stream,
      clientIp: caller.clientIp,
      startedAt: this.startedAt,
      firstByteAt: null,
    };
    if (what.attribution !== undefined) record.attribution = what.attribution;
    this.call = new Call(opts, caller, admission, record, this.trace);
    return this.call;
  }

  /** The routes to try, or 503 when the model has none right now. */
  routes<R>(routes: R[], model: string): R[] {
    if (routes.length === 0)
      throw new GatewayError(
        "unavailable",
        "no_upstream",
        `The model '${model}' has no upstream configured right now.`,
      );
    return routes;
  }

  /**
   * From now on a client that leaves cuts a stream (Call.cut) or leaves a call still waiting for its answer
   * (Call.leave): the upstream bills the work either way, so its answer is still read for the usage.
   */
  watchClient(call: Call, abort: CallAbort): void {
    const res = this.res;
    res.on("close", () => {
      if (res.writableFinished) return;
      if (call.streaming) call.cut(() => abort.abort());
      else call.leave(() => abort.abort());
    });
  }

  /** Ends a call that failed at any step, in the client's protocol. */
  async fail(err: unknown): Promise<void> {
    const { res, requestId } = this;
    // Refused before the upstream: the limits taken for this call are given back.
    if (this.limits !== undefined && !this.admitted) await cancelLimits(this.limits);
    this.call?.failed(err);
    this.trace?.fail(err);
    if (!res.headersSent) sendError(res, err, this.ep.client.renderError, requestId);
    else if (!res.writableEnded) res.end();
    if (!(err instanceof GatewayError)) this.opts.logger.error({ requestId, err }, "unexpected error");
  }
}
