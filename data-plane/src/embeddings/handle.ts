import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import { emptyUsage } from "../protocols/canonical.ts";
import {
  type ClientRoute,
  type EmbeddingResult,
  type EmbeddingsAdapter,
  type ProtocolAdapter,
  embeddingsOf,
} from "../protocols/index.ts";
import { parseJsonLoose } from "../protocols/shared.ts";
import { admit, cancelLimits, identify, startLimits } from "../server/admission.ts";
import { keyHashFrom } from "../server/auth.ts";
import { declaredLength, parseJsonObject, readBody } from "../server/body.ts";
import { Call } from "../server/call.ts";
import type { DataPlaneOptions } from "../server/context.ts";
import { sendError, sendJson } from "../server/respond.ts";
import type { AcquireResult } from "../ratelimit/types.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import { type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";

// The embeddings endpoints, on the same path as generation: key → body → policy and limits → routes (retries,
// failover, breaker) → answer → accounting. Each protocol's adapter owns its embeddings (its routes with op
// "embed", the client's shape, its upstream's shape; see protocols/embeddings.ts): an upstream of the client's
// protocol gets the client's body (its name for the model changed when the route renames it); another
// protocol gets a translation. This file names no protocol.

export interface EmbeddingEndpoint {
  /** the client's protocol: its adapter has `embeddings` (the endpoint is one of its "embed" routes) */
  client: ProtocolAdapter;
  route: ClientRoute;
  queryKey?: string | null;
}

/** The embeddings side of a route's upstream; a route to an upstream that makes none is the operator's error. */
function upstreamEmbeddings(route: RouteSnapshot): EmbeddingsAdapter {
  const e = embeddingsOf(route.protocol);
  if (e) return e;
  throw new GatewayError(
    "upstream",
    "upstream_misconfigured",
    `The gateway's configuration routes this embedding model to an upstream that makes no embeddings; the operator has been told.`,
  );
}

export async function handleEmbeddings(
  opts: DataPlaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  ep: EmbeddingEndpoint,
): Promise<void> {
  const { client } = ep;
  // An adapter declares "embed" routes only with its embeddings (the contract suite checks it).
  const own = client.embeddings;
  if (!own) throw new Error(`protocol ${client.name} has an embed route but no embeddings`);
  const startedAt = Date.now();
  let call: Call | null = null;
  let limits: Promise<AcquireResult> | undefined;
  let admitted = false;
  try {
    const caller = identify(opts, keyHashFrom(req.headers, client.keySources, ep.queryKey), req);
    const declared = declaredLength(req, opts.maxBodyBytes);
    if (declared !== null) limits = startLimits(opts, caller, tokensFromChars(declared), startedAt);
    const raw = await readBody(req, opts.maxBodyBytes);
    const body = parseJsonObject(raw);
    const clientCall = own.parseClientRequest(body, ep.route);
    const canonical = clientCall.request;
    // What the input costs when the upstream does not say: its characters, as the rate limits estimate them.
    const inputChars = canonical.inputs.reduce((n, s) => n + s.length, 0);
    const admission = await admit(
      opts,
      caller,
      canonical.model,
      tokensFromChars(declared ?? raw.length),
      startedAt,
      limits,
      "embedding",
    );
    admitted = true;
    call = new Call(opts, caller, admission, {
      requestId,
      keyId: caller.key.id,
      accountId: caller.account.id,
      model: admission.model.id,
      protocol: client.name,
      upstream: null,
      stream: false,
      clientIp: caller.clientIp,
      startedAt,
      firstByteAt: null,
    });
    const routes = orderRoutes(admission.model.routes);
    if (routes.length === 0)
      throw new GatewayError(
        "unavailable",
        "no_upstream",
        `The model '${canonical.model}' has no upstream configured right now.`,
      );
    const abort = new CallAbort();
    const started = call;
    res.on("close", () => {
      if (res.writableFinished) return;
      // The upstream has the input once it is sent and bills for it: a client that leaves still waits for the
      // answer (at most the drain time, Call.leave) and is charged its count, as a chat call is.
      started.leave(() => abort.abort());
    });

    const outgoing = (route: RouteSnapshot): Outgoing => {
      const up = upstreamEmbeddings(route);
      if (up === own) {
        const renamed = route.upstreamModel !== canonical.model;
        return {
          path: clientCall.passthroughPath(route.upstreamModel),
          body: renamed ? JSON.stringify(clientCall.renamedBody(body, route.upstreamModel)) : raw,
          op: "embed",
        };
      }
      const built = up.buildUpstreamRequest(canonical, route.upstreamModel);
      return { path: built.path, body: JSON.stringify(built.body), op: "embed" };
    };

    const answer = await callUpstream(opts, routes, outgoing, abort, caller.account.id, null, () => started.clientGone);
    call.answered();
    call.record.upstream = answer.route.upstream;
    let text: string;
    try {
      text = await answer.upstream.text();
    } catch {
      answer.settle(false);
      throw new GatewayError("upstream", "upstream_stream_error", "The upstream answer broke off before it finished.");
    }
    call.firstByte();
    const parsed = parseJsonLoose(text);
    let result: EmbeddingResult;
    const up = upstreamEmbeddings(answer.route);
    const same = up === own;
    try {
      if (parsed === undefined) throw new Error("not JSON");
      result = up.parseUpstreamResponse(parsed);
    } catch {
      answer.settle(false);
      throw new GatewayError(
        "upstream",
        "upstream_bad_response",
        "The upstream answered embeddings the gateway cannot read.",
      );
    }
    answer.settle(true);
    const promptTokens = result.promptTokens ?? tokensFromChars(inputChars);
    call.setUsage({ ...emptyUsage(), promptTokens });
    // Gemini's answers carry no count: the call is billed (and logged) as the gateway's estimate.
    call.usageComplete = result.promptTokens !== null;
    let out: string;
    if (same && answer.route.upstreamModel === canonical.model)
      out = text; // the upstream's bytes, read for usage only
    else if (same) out = clientCall.relayRenamed(text, parsed as Record<string, unknown>);
    else out = JSON.stringify(clientCall.render(result, promptTokens));
    if (call.clientGone || res.destroyed) {
      await call.finish(499, "client_closed"); // answered after the client left: charged, nothing to send
      return;
    }
    await call.finish(200); // the charge is durable before the answer goes out
    sendJson(res, 200, out, admission.headers);
  } catch (err) {
    if (limits !== undefined && !admitted) await cancelLimits(limits);
    call?.failed(err);
    if (!res.headersSent) sendError(res, err, client.renderError, requestId);
    else if (!res.writableEnded) res.end();
    if (!(err instanceof GatewayError)) opts.logger.error({ requestId, err }, "unexpected error");
  }
}
