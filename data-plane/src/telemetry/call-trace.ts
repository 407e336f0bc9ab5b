import type { IncomingMessage } from "node:http";
import type { RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import { providerNameOf } from "../protocols/index.ts";
import { type Span, SpanKind, SpanStatusCode, type Tracing } from "./tracing.ts";

// The trace of one data-plane call, following OpenTelemetry's GenAI semantic conventions: a SERVER span for
// the call ("chat <model>"), child spans for the rate-limit decision, each upstream attempt (CLIENT spans, so
// retries and failover show one by one, each carrying the traceparent it sent) and the relay of the answer.
// No prompt or completion text is ever recorded. Created only when tracing is on. Each protocol's adapter names
// its provider (`providerName`).

export interface TracedUsage {
  promptTokens: number;
  completionTokens: number;
  reasoningTokens?: number;
  cachedTokens?: number;
}

export class CallTrace {
  readonly root: Span;
  private relaySpan: Span | null = null;
  private ended = false;

  constructor(
    private readonly tracing: Tracing,
    req: IncomingMessage,
    requestId: string,
    protocol: string,
    readonly operation = "chat",
  ) {
    // An incoming traceparent makes this call part of the caller's trace.
    const parent = tracing.extract(req.headers);
    this.root = tracing.tracer.startSpan(
      operation,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "gen_ai.operation.name": operation,
          "modelgate.request_id": requestId,
          "modelgate.client_protocol": protocol,
          "http.request.method": req.method ?? "POST",
        },
      },
      parent,
    );
  }

  /** The request is parsed: name the span after the model, as the convention does. */
  request(model: string, stream: boolean, accountId: string, keyId: string): void {
    this.root.updateName(`${this.operation} ${model}`);
    this.root.setAttributes({
      "gen_ai.request.model": model,
      "modelgate.stream": stream,
      "modelgate.account_id": accountId,
      "modelgate.key_id": keyId,
    });
  }

  /** The rate-limit and policy decision, timed around its wait. */
  limits(): Span {
    return this.tracing.child("modelgate.ratelimit", this.root);
  }

  /** One try of one route: a CLIENT span, and the traceparent to send with it. */
  attempt(
    route: RouteSnapshot,
    url: string,
    attempt: number,
    headers: Record<string, string>,
  ): { span: Span; headers: Record<string, string> } {
    let host = "";
    let port: number | undefined;
    try {
      const u = new URL(url);
      host = u.hostname;
      port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    } catch {
      /* a demo:// route */
    }
    const span = this.tracing.child(
      `${this.operation} ${route.upstreamModel}`,
      this.root,
      {
        "gen_ai.operation.name": this.operation,
        "gen_ai.provider.name": providerNameOf(route.protocol),
        "gen_ai.request.model": route.upstreamModel,
        "server.address": host,
        ...(port !== undefined ? { "server.port": port } : {}),
        "modelgate.upstream": route.upstream,
        "modelgate.attempt": attempt,
      },
      SpanKind.CLIENT,
    );
    const out = { ...headers };
    this.tracing.inject(span, out);
    return { span, headers: out };
  }

  /** The answer is on its way to the client. */
  relay(route: RouteSnapshot): void {
    this.root.setAttributes({
      "gen_ai.provider.name": providerNameOf(route.protocol),
      "gen_ai.response.model": route.upstreamModel,
      "modelgate.upstream": route.upstream,
    });
    this.relaySpan = this.tracing.child("modelgate.relay", this.root);
  }

  /** The call is accounted: usage, status and the end of every open span. */
  finish(status: number, errorCode: string | null, usage: TracedUsage | null, finishReasons?: string[]): void {
    if (this.ended) return;
    this.ended = true;
    const attrs: Record<string, string | number | string[]> = { "http.response.status_code": status };
    if (usage) {
      attrs["gen_ai.usage.input_tokens"] = usage.promptTokens;
      attrs["gen_ai.usage.output_tokens"] = usage.completionTokens;
      if (usage.reasoningTokens) attrs["gen_ai.usage.reasoning_tokens"] = usage.reasoningTokens;
      if (usage.cachedTokens) attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cachedTokens;
    }
    if (finishReasons?.length) attrs["gen_ai.response.finish_reasons"] = finishReasons;
    this.root.setAttributes(attrs);
    const failed = status >= 400;
    if (this.relaySpan) {
      if (failed) this.relaySpan.setStatus({ code: SpanStatusCode.ERROR });
      this.relaySpan.end();
    }
    if (failed) {
      this.root.setAttribute("error.type", errorCode ?? String(status));
      this.root.setStatus({ code: SpanStatusCode.ERROR, message: errorCode ?? undefined });
    }
    this.root.end();
  }

  /** Refused or failed before any accounting (bad body, unknown key, …). */
  fail(err: unknown): void {
    if (this.ended) return;
    const gw = err instanceof GatewayError ? err : null;
    this.finish(gw?.status ?? 500, gw?.code ?? "internal_error", null);
  }
}
