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
import { CallEntry, type Endpoint } from "../server/call-entry.ts";
import type { DataPlaneOptions } from "../server/context.ts";
import { sendJson } from "../server/respond.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import { type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";

// The embeddings endpoints, on the same path as generation: key → body → policy and limits → routes (retries,
// failover, breaker) → answer → accounting, the way in (and out on a failure) being generation's
// (server/call-entry.ts). Each protocol's adapter owns its embeddings (its routes with op "embed", the client's
// shape, its upstream's shape; see protocols/embeddings.ts): an upstream of the client's protocol gets the
// client's body (its name for the model changed when the route renames it); another protocol gets a
// translation. This file names no protocol.

export interface EmbeddingEndpoint extends Endpoint {
  /** the client's protocol: its adapter has `embeddings` (the endpoint is one of its "embed" routes) */
  client: ProtocolAdapter;
  route: ClientRoute;
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
  const entry = new CallEntry(opts, req, res, requestId, ep);
  try {
    const { caller, raw, body } = await entry.read();
    const clientCall = own.parseClientRequest(body, ep.route);
    const canonical = clientCall.request;
    // What the input costs when the upstream does not say: its characters, as the rate limits estimate them.
    const inputChars = canonical.inputs.reduce((n, s) => n + s.length, 0);
    const call = await entry.admit(caller, canonical.model, raw.length, { purpose: "embedding", stream: false });
    const admission = call.admission;
    const routes = entry.routes(orderRoutes(admission.model.routes), canonical.model);
    const abort = new CallAbort();
    // The upstream has the input once it is sent and bills for it: a client that leaves still waits for the
    // answer (at most the drain time, Call.leave) and is charged its count, as a chat call is.
    entry.watchClient(call, abort);

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

    const answer = await callUpstream(opts, routes, outgoing, abort, caller.account.id, null, () => call.clientGone);
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
    await entry.fail(err);
  }
}
