import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import { type ClientRoute, type ProtocolAdapter, type ProtocolName, protocols } from "../protocols/index.ts";
import { CallTrace } from "../telemetry/call-trace.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import type { AcquireResult } from "../ratelimit/types.ts";
import { admit, cancelLimits, identify, startLimits } from "./admission.ts";
import { type KeySource, keyHashFrom } from "./auth.ts";
import { declaredLength, parseJsonObject, readBody } from "./body.ts";
import { Call } from "./call.ts";
import type { DataPlaneOptions } from "./context.ts";
import { ArrayStreamWrapper, PassthroughFramer, relayJson, relayStream } from "./relay.ts";
import { relayOpenAIJson, relayOpenAIStream } from "./relay-openai.ts";
import { sendError } from "./respond.ts";
import { type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";
import { attributionOf } from "../usage/attribution.ts";

/** A client-facing generation endpoint: which protocol it speaks and where that protocol puts the key. */
export interface Endpoint {
  protocol: ProtocolName;
  keySources: KeySource[];
  /** Gemini names the model and streaming in the URL */
  route?: ClientRoute;
  /** Gemini streaming without `alt=sse`: one JSON array, streamed element by element */
  jsonArray?: boolean;
  queryKey?: string | null;
}

type Mode = "openai" | "passthrough" | "translate";

const upstreamProtocol = (route: RouteSnapshot): ProtocolName => (route.protocol === "demo" ? "openai" : route.protocol);

/**
 * The one request path for every client protocol and every upstream protocol:
 * key → body → policy and limits → routes (retries, failover, breaker) → relay → accounting.
 */
export async function handleGenerate(opts: DataPlaneOptions, req: IncomingMessage, res: ServerResponse, requestId: string, ep: Endpoint): Promise<void> {
  const client = protocols[ep.protocol];
  const startedAt = Date.now();
  let call: Call | null = null;
  let limits: Promise<AcquireResult> | undefined;
  let admitted = false;
  const trace = opts.tracing ? new CallTrace(opts.tracing, req, requestId, ep.protocol) : null;
  try {
    const caller = identify(opts, keyHashFrom(req.headers, ep.keySources, ep.queryKey), req);
    // With the size declared, the limits are taken while the body is read and parsed (the estimate is the
    // same either way: a quarter of the body's bytes).
    const declared = declaredLength(req, opts.maxBodyBytes);
    if (declared !== null) limits = startLimits(opts, caller, tokensFromChars(declared), startedAt);
    const raw = await readBody(req, opts.maxBodyBytes);
    const body = parseJsonObject(raw);
    const canonical = client.parseClientRequest(body, ep.route);
    const attribution = attributionOf(ep.protocol, body, req.headers);
    trace?.request(canonical.model, canonical.stream, caller.account.id, caller.key.id);
    const limitsSpan = trace?.limits();
    const admission = await admit(opts, caller, canonical.model, tokensFromChars(declared ?? raw.length), startedAt, limits).finally(() => limitsSpan?.end());
    admitted = true;
    call = new Call(opts, caller, admission, {
      requestId,
      keyId: caller.key.id,
      accountId: caller.account.id,
      model: admission.model.id,
      protocol: ep.protocol,
      upstream: null,
      stream: canonical.stream,
      clientIp: caller.clientIp,
      startedAt,
      firstByteAt: null,
      attribution,
    }, trace);
    const routes = orderRoutes(admission.model.routes);
    if (routes.length === 0) throw new GatewayError("unavailable", "no_upstream", `The model '${canonical.model}' has no upstream configured right now.`);

    const abort = new CallAbort();
    res.on("close", () => {
      if (res.writableFinished) return;
      // A stream the client left is still read for its exact usage (Call.cut); anything else stops now.
      if (call?.streaming) call.cut(() => abort.abort());
      else abort.abort();
    });
    const modeOf = (route: RouteSnapshot): Mode => {
      const up = upstreamProtocol(route);
      if (ep.protocol === "openai" && up === "openai") return "openai";
      if (ep.protocol === up && route.upstreamModel === canonical.model && !ep.jsonArray) return "passthrough";
      return "translate";
    };
    const outgoing = (route: RouteSnapshot): Outgoing => {
      const mode = modeOf(route);
      if (mode === "openai") {
        // The client's bytes as they are when nothing needs changing: the common case pays no re-serialisation.
        if (route.upstreamModel === canonical.model && (!canonical.stream || canonical.streamIncludeUsage === true)) {
          return { path: "/chat/completions", body: raw };
        }
        const b: Record<string, unknown> = { ...body, model: route.upstreamModel };
        // Always ask for usage: it is what the call is billed by. The relay hides it from clients that did not ask.
        if (canonical.stream) b.stream_options = { ...(body.stream_options as object | undefined), include_usage: true };
        return { path: "/chat/completions", body: JSON.stringify(b) };
      }
      if (mode === "passthrough" || upstreamProtocol(route) === ep.protocol) {
        const path =
          ep.protocol === "anthropic"
            ? "/messages"
            : `/models/${encodeURIComponent(route.upstreamModel)}:${canonical.stream ? "streamGenerateContent?alt=sse" : "generateContent"}`;
        // Another model name on the client's own protocol: the client's body, fields the gateway does not know
        // included, with only the name changed (Gemini names the model in the path). The answer is translated back.
        const renamed = mode === "passthrough" || ep.protocol === "gemini" ? raw : JSON.stringify({ ...body, model: route.upstreamModel });
        return { path, body: renamed };
      }
      const up = protocols[upstreamProtocol(route)].buildUpstreamRequest(canonical, route.upstreamModel, { stream: canonical.stream });
      return { path: up.path, body: JSON.stringify(up.body), headers: up.headers };
    };

    const answer = await callUpstream(opts, routes, outgoing, abort, caller.account.id, trace);
    call.record.upstream = answer.route.upstream;
    trace?.relay(answer.route);
    const upstreamAdapter = protocols[upstreamProtocol(answer.route)];
    const headers = admission.headers;
    switch (modeOf(answer.route)) {
      case "openai":
        if (canonical.stream) await relayOpenAIStream(call, res, answer, canonical.model, canonical.streamIncludeUsage === true, headers);
        else await relayOpenAIJson(call, res, answer, canonical.model, headers);
        return;
      case "passthrough":
        if (canonical.stream) {
          const frame = errorFrame(client, requestId);
          const framer = new PassthroughFramer(ep.protocol as "anthropic" | "gemini", frame);
          await relayStream(call, res, answer, { decoder: upstreamAdapter.createUpstreamStreamDecoder(), encoder: null, passthrough: framer, errorFrame: frame }, headers);
        } else await relayJson(call, res, answer, upstreamAdapter, null, headers);
        return;
      case "translate": {
        const ctx = { model: canonical.model, requestId };
        if (canonical.stream) {
          await relayStream(
            call,
            res,
            answer,
            {
              decoder: upstreamAdapter.createUpstreamStreamDecoder(),
              encoder: client.createClientStreamEncoder({ ...ctx, includeUsage: canonical.streamIncludeUsage === true }),
              errorFrame: errorFrame(client, requestId),
              wrap: ep.jsonArray ? new ArrayStreamWrapper() : undefined,
              contentType: ep.jsonArray ? "application/json; charset=utf-8" : undefined,
            },
            headers,
          );
        } else await relayJson(call, res, answer, upstreamAdapter, (c) => client.renderClientResponse(c, ctx), headers);
        return;
      }
    }
  } catch (err) {
    // Refused before the upstream: the limits taken for this call are given back.
    if (limits !== undefined && !admitted) await cancelLimits(limits);
    call?.failed(err);
    trace?.fail(err);
    if (!res.headersSent) sendError(res, err, client.renderError, requestId);
    else if (!res.writableEnded) res.end();
    if (!(err instanceof GatewayError)) opts.logger.error({ requestId, err }, "unexpected error");
  }
}

/** A gateway error as one frame of the client protocol's stream (passthrough streams). */
function errorFrame(client: ProtocolAdapter, requestId: string) {
  return (err: GatewayError): string => {
    const body = client.renderError(err, requestId).body;
    if (client.name === "anthropic") return `event: error\ndata: ${body}\n\n`;
    if (client.name === "gemini") return `data: ${body}\r\n\r\n`;
    return `data: ${body}\n\n`;
  };
}
