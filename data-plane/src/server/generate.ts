import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import {
  type ClientRoute,
  type ClientSession,
  type ProtocolAdapter,
  protocols,
  upstreamProtocolOf,
} from "../protocols/index.ts";
import { CallTrace } from "../telemetry/call-trace.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import type { AcquireResult } from "../ratelimit/types.ts";
import { maxOutputTokensOf } from "../billing/reservation.ts";
import { admit, cancelLimits, identify, startLimits, topUpLimits } from "./admission.ts";
import { keyHashFrom } from "./auth.ts";
import { declaredLength, parseJsonObject, readBody } from "./body.ts";
import { Call } from "./call.ts";
import type { DataPlaneOptions } from "./context.ts";
import { relayJson, relayPassthroughJson, relayPassthroughStream, relayStream } from "./relay.ts";
import { foreignIdRefusal, idKeeper, keepingIds } from "./provider-ids.ts";
import { sendError } from "./respond.ts";
import { type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";
import { attributionOf } from "../usage/attribution.ts";

/** A client-facing generation endpoint: the protocol it speaks and what its path said. */
export interface Endpoint {
  client: ProtocolAdapter;
  /** Gemini names the model and streaming in the URL */
  route?: ClientRoute;
  queryKey?: string | null;
}

/**
 * The one request path for every client protocol and every upstream protocol:
 * key → body → policy and limits → routes (retries, failover, breaker) → relay → accounting.
 * A route whose upstream speaks the client's protocol takes the client's bytes (the adapter's passthrough,
 * the fast path); any other is translated through the canonical form.
 */
export async function handleGenerate(
  opts: DataPlaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  ep: Endpoint,
): Promise<void> {
  const client = ep.client;
  const startedAt = Date.now();
  let call: Call | null = null;
  let limits: Promise<AcquireResult> | undefined;
  let admitted = false;
  const trace = opts.tracing ? new CallTrace(opts.tracing, req, requestId, client.name) : null;
  try {
    const caller = identify(opts, keyHashFrom(req.headers, client.keySources, ep.queryKey), req);
    // With the size declared, the limits are taken while the body is read and parsed (the estimate is the
    // same either way: a quarter of the body's bytes).
    const declared = declaredLength(req, opts.maxBodyBytes);
    if (declared !== null) limits = startLimits(opts, caller, tokensFromChars(declared), startedAt);
    const raw = await readBody(req, opts.maxBodyBytes);
    const body = parseJsonObject(raw);
    const session: ClientSession | null =
      client.openSession?.(body, opts.conversations, caller.account.id, {
        maxBytes: opts.maxBodyBytes,
        bodyBytes: raw.length,
      }) ?? null;
    let canonical = client.parseClientRequest(session?.refersToState ? session.withoutState : body, ep.route);
    const attribution = attributionOf(client.name, body, req.headers);
    trace?.request(canonical.model, canonical.stream, caller.account.id, caller.key.id);
    const limitsSpan = trace?.limits();
    const admitting = admit(
      opts,
      caller,
      canonical.model,
      tokensFromChars(declared ?? raw.length),
      startedAt,
      limits,
      "chat",
      maxOutputTokensOf(body),
    );
    // Untraced calls skip the .finally: its closure and two promises were per-call garbage for nothing.
    const admission = await (limitsSpan === undefined ? admitting : admitting.finally(() => limitsSpan.end()));
    admitted = true;
    call = new Call(
      opts,
      caller,
      admission,
      {
        requestId,
        keyId: caller.key.id,
        accountId: caller.account.id,
        model: admission.model.id,
        protocol: client.name,
        upstream: null,
        stream: canonical.stream,
        clientIp: caller.clientIp,
        startedAt,
        firstByteAt: null,
        attribution,
      },
      trace,
    );
    const routes = orderRoutes(admission.model.routes);
    if (routes.length === 0)
      throw new GatewayError(
        "unavailable",
        "no_upstream",
        `The model '${canonical.model}' has no upstream configured right now.`,
      );

    // The client's own protocol upstream gets the client's body (fields the gateway does not know included);
    // its answer passes through too unless the adapter says it needs translating back (another model name).
    const sameProtocol = (route: RouteSnapshot): boolean =>
      client.passthrough !== undefined && upstreamProtocolOf(route.protocol) === client.name;
    const passes = (route: RouteSnapshot): boolean =>
      sameProtocol(route) && (client.passthrough!.accepts?.(canonical, route.upstreamModel, ep.route) ?? true);
    // A stateful request (previous_response_id) translated for another protocol needs its references resolved
    // from the gateway's store first; toward an upstream of its own protocol they pass through.
    let translated = body;
    let stateError: unknown = null;
    if (session?.refersToState && routes.some((r) => !sameProtocol(r))) {
      try {
        translated = await session.expand();
        canonical = client.parseClientRequest(translated, ep.route);
      } catch (err) {
        if (!sameProtocol(routes[0]!)) throw err;
        stateError = err; // only the translated fallbacks fail on it
      }
      // The limits were taken on the body's size; the conversation is what the call sends (measured while it was
      // expanded: serialising it here again cost as much as the expansion).
      if (translated !== body)
        await topUpLimits(
          admission,
          tokensFromChars(session?.expandedBytes ?? JSON.stringify(translated).length),
          startedAt,
        );
    }

    // Provider-side ids a passthrough request names must be the account's own (server/provider-ids.ts); as with
    // the store above, only the routes that pass through fail on them when the first route translates.
    const foreignId = routes.some(sameProtocol) ? await foreignIdRefusal(opts, client, body, caller.account.id) : null;
    if (foreignId && sameProtocol(routes[0]!)) throw foreignId;
    const abort = new CallAbort();
    res.on("close", () => {
      if (res.writableFinished) return;
      // A stream the client left is still read for its exact usage (Call.cut), and a non-streamed answer still
      // awaited (Call.leave): the upstream bills the work either way.
      if (call?.streaming) call.cut(() => abort.abort());
      else if (call) call.leave(() => abort.abort());
      else abort.abort();
    });
    const outgoing = (route: RouteSnapshot): Outgoing => {
      if (sameProtocol(route)) {
        if (foreignId) throw foreignId;
        const pt = client.passthrough!;
        return {
          path: pt.path(route.upstreamModel, canonical.stream),
          body: pt.body(raw, body, canonical, route.upstreamModel),
        };
      }
      if (stateError) throw stateError;
      const up = protocols[upstreamProtocolOf(route.protocol)].buildUpstreamRequest(canonical, route.upstreamModel, {
        stream: canonical.stream,
      });
      return { path: up.path, body: JSON.stringify(up.body), headers: up.headers };
    };

    const answer = await callUpstream(opts, routes, outgoing, abort, caller.account.id, trace, () => call!.clientGone);
    call.answered();
    call.record.upstream = answer.route.upstream;
    trace?.relay(answer.route);
    const headers = admission.headers;
    if (passes(answer.route)) {
      const pt = client.passthrough!;
      const keep = idKeeper(opts, caller.account.id, requestId);
      if (canonical.stream) {
        const reader = pt.createStream(canonical.model, requestId, canonical);
        await relayPassthroughStream(
          call,
          res,
          answer,
          keepingIds(reader, keep),
          headers,
          client.streamContentType?.(ep.route),
        );
      } else await relayPassthroughJson(call, res, answer, pt, canonical.model, headers, keep);
      return;
    }
    const upstreamAdapter = protocols[upstreamProtocolOf(answer.route.protocol)];
    const ctx = { model: canonical.model, requestId, request: body, commit: session?.commit };
    if (canonical.stream) {
      await relayStream(
        call,
        res,
        answer,
        {
          decoder: upstreamAdapter.createUpstreamStreamDecoder(),
          encoder: client.createClientStreamEncoder({
            ...ctx,
            includeUsage: canonical.streamIncludeUsage === true,
            jsonArray: ep.route?.jsonArray === true,
          }),
          contentType: client.streamContentType?.(ep.route),
        },
        headers,
      );
    } else
      await relayJson(
        call,
        res,
        answer,
        upstreamAdapter,
        (c) => client.renderClientResponse(c, ctx),
        ctx.commit,
        headers,
      );
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
