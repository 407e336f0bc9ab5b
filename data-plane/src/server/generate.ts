import type { IncomingMessage, ServerResponse } from "node:http";
import type { ModelSnapshot, RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import {
  type CanonicalRequest,
  type ClientSession,
  type ProtocolAdapter,
  type RequestHead,
  upstreamAdapterOf,
  upstreamProtocolOf,
} from "../protocols/index.ts";
import { CallTrace } from "../telemetry/call-trace.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import { maxOutputTokensOf } from "../billing/reservation.ts";
import { serveAs, topUpLimits } from "./admission.ts";
import { affinityOf } from "../upstreams/affinity.ts";
import { CallEntry, type Endpoint } from "./call-entry.ts";
import { takeRequestFallbacks } from "./fallbacks.ts";
import type { DataPlaneOptions } from "./context.ts";
import { relayJson, relayPassthroughJson, relayPassthroughStream, relayStream } from "./relay.ts";
import { foreignIdRefusal, idKeeper, keepingIds } from "./provider-ids.ts";
import { type Answer, type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";
import { providerOf } from "../providers/index.ts";
import type { UpstreamTraits } from "../protocols/types.ts";
import { attributionOf } from "../usage/attribution.ts";

/**
 * The one request path for every client protocol and every upstream protocol:
 * key → body → policy and limits → routes (retries, failover, breaker) → relay → accounting. The way in (key,
 * body, admission) and out on a failure is every upstream endpoint's (call-entry.ts).
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
  const trace = opts.tracing ? new CallTrace(opts.tracing, req, requestId, client.name) : null;
  const entry = new CallEntry(opts, req, res, requestId, ep, trace);
  try {
    const read = await entry.read();
    const { caller, body } = read;
    let raw = read.raw;
    // The request's own fallbacks (`models`, x-modelgate-fallbacks): `models` never reaches the upstream, so a
    // body that had it is passed on re-serialised (only those bodies pay for it).
    const requested = takeRequestFallbacks(client.name, body, req);
    if (requested.bodyChanged) raw = Buffer.from(JSON.stringify(body));
    const session: ClientSession | null =
      client.openSession?.(body, opts.conversations, caller.account.id, {
        maxBytes: opts.maxBodyBytes,
        bodyBytes: raw.length,
      }) ?? null;
    const parse = (b: Record<string, unknown>): CanonicalRequest => client.parseClientRequest(b, ep.route);
    // What the gateway reads whatever the route: model and stream flag. The whole body is parsed (validated and
    // translated) only for a route of another protocol; a same-protocol upstream judges it itself.
    let canonical: CanonicalRequest | null = client.passthrough
      ? null
      : parse(session?.refersToState ? session.withoutState : body);
    const head: RequestHead = canonical ?? client.passthrough!.head(body, ep.route);
    const attribution = attributionOf(client.name, body, req.headers);
    trace?.request(head.model, head.stream, caller.account.id, caller.key.id);
    const call = await entry.admit(caller, head.model, raw.length, {
      purpose: "chat",
      stream: head.stream,
      maxOutputTokens: maxOutputTokensOf(body),
      fallbacks: requested.fallbacks,
      attribution,
    });
    const admission = call.admission;
    // The model named, then its fallbacks (admission.ts, fallbackChain): each with its routes in this call's
    // order. One conversation's calls share an affinity, hence their route (pick-route.ts) and key.
    const affinity = affinityOf(body);
    const primary = admission.model;
    const plans = [primary, ...admission.fallbacks].map((model) => ({
      model,
      routes: orderRoutes(model.routes, affinity),
    }));
    const routes = entry.routes(plans.length === 1 ? plans[0]!.routes : plans.flatMap((p) => p.routes), head.model);

    // The client's own protocol upstream gets the client's body (fields the gateway does not know included);
    // its answer passes through too unless the adapter says it needs translating back (another model name).
    const sameProtocol = (route: RouteSnapshot): boolean =>
      client.passthrough !== undefined && upstreamProtocolOf(route.protocol) === client.name;
    const passes = (route: RouteSnapshot, h: RequestHead): boolean =>
      sameProtocol(route) && (client.passthrough!.accepts?.(h, route.upstreamModel, ep.route) ?? true);
    // A route of another protocol needs the body parsed into the canonical form; a stateful request
    // (previous_response_id) needs its references resolved from the gateway's store first. Toward an upstream of
    // the client's own protocol neither happens. When only fallbacks translate, a body they cannot take fails
    // them alone.
    let translated = body;
    let translateError: unknown = null;
    if (canonical === null && routes.some((r) => !sameProtocol(r))) {
      try {
        if (session?.refersToState) translated = await session.expand();
        canonical = parse(translated);
      } catch (err) {
        if (!sameProtocol(routes[0]!)) throw err;
        translateError = err;
      }
      // The limits were taken on the body's size; the conversation is what the call sends (measured while it was
      // expanded: serialising it here again cost as much as the expansion).
      if (translated !== body)
        await topUpLimits(
          admission,
          tokensFromChars(session?.expandedBytes ?? JSON.stringify(translated).length),
          entry.startedAt,
        );
    }
    const forwarded = sameProtocolHeaders(client, req);
    /** What each translated route left out (translation.ts): named in the answer's x-modelgate-dropped. */
    const dropped = new Map<RouteSnapshot, string[]>();

    // Provider-side ids a passthrough request names must be the account's own (server/provider-ids.ts); as with
    // the store above, only the routes that pass through fail on them when the first route translates.
    const foreignId = routes.some(sameProtocol) ? await foreignIdRefusal(opts, client, body, caller.account.id) : null;
    if (foreignId && sameProtocol(routes[0]!)) throw foreignId;
    const abort = new CallAbort();
    entry.watchClient(call, abort);
    const outgoing = (route: RouteSnapshot, model: ModelSnapshot): Outgoing => {
      // What the route's provider declares that changes the body (an unknown provider: none).
      const traits = providerOf(route.provider)?.streamUsageUnasked === true ? STREAM_USAGE_UNASKED : undefined;
      if (sameProtocol(route)) {
        if (foreignId) throw foreignId;
        const pt = client.passthrough!;
        const out: Outgoing = {
          path: withClientQuery(pt.path(route.upstreamModel, head.stream), req.url),
          body: pt.body(raw, body, head, route.upstreamModel, traits),
          stream: head.stream,
        };
        if (forwarded) out.headers = forwarded;
        return out;
      }
      if (canonical === null) throw translateError;
      const up = upstreamAdapterOf(route.protocol).buildUpstreamRequest(canonical, route.upstreamModel, {
        stream: canonical.stream,
        reasoning: model.reasoning,
        strict: model.strict === true,
        ...traits,
      });
      if (up.dropped && up.dropped.length > 0) dropped.set(route, up.dropped);
      return { path: up.path, body: JSON.stringify(up.body), headers: up.headers, stream: canonical.stream };
    };

    // Fallbacks take over only before the first byte: callUpstream returns at the upstream's 2xx status line, and
    // what fails after it (a broken stream) is the relay's, never retried on another model.
    let answer: Answer | null = null;
    let served = primary;
    let failure: unknown = null;
    for (const plan of plans) {
      if (plan.routes.length === 0) continue;
      if (failure !== null) {
        if (!fallsBack(failure) || abort.aborted || call.clientGone) break;
        opts.logger.info({ requestId, model: served.id, fallback: plan.model.id }, "model failed; trying its fallback");
      }
      served = plan.model;
      try {
        answer = await callUpstream(
          opts,
          plan.routes,
          (route) => outgoing(route, plan.model),
          abort,
          caller.account.id,
          trace,
          () => call.clientGone,
          affinity,
        );
        break;
      } catch (err) {
        failure = err;
      }
    }
    if (answer === null) throw failure;
    // The answer, the usage row and the bill name the model that served (at its price for this account).
    if (served !== primary) {
      serveAs(admission, caller, served);
      call.record.model = served.id;
    }
    const clientModel = served === primary ? head.model : served.id;
    const servedHead = served === primary ? head : { ...head, model: clientModel };
    call.answered();
    call.record.upstream = answer.route.upstream;
    trace?.relay(answer.route);
    const left = dropped.get(answer.route);
    if (left) call.record.dropped = left;
    const headers = left ? { ...admission.headers, [DROPPED_HEADER]: left.join(", ") } : admission.headers;
    if (passes(answer.route, servedHead)) {
      const pt = client.passthrough!;
      const keep = idKeeper(opts, caller.account.id, requestId);
      if (head.stream) {
        const reader = pt.createStream(clientModel, requestId, servedHead);
        await relayPassthroughStream(
          call,
          res,
          answer,
          keepingIds(reader, keep),
          headers,
          client.streamContentType?.(ep.route),
        );
      } else await relayPassthroughJson(call, res, answer, pt, clientModel, headers, keep);
      return;
    }
    // Translated back: a same-protocol route whose answer is renamed has its body parsed only now.
    canonical ??= parse(translated);
    const upstreamAdapter = upstreamAdapterOf(answer.route.protocol);
    const ctx = {
      model: served === primary ? canonical.model : clientModel,
      requestId,
      request: body,
      commit: session?.commit,
    };
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
    await entry.fail(err);
  }
}

/**
 * Whether a model's failure lets its fallback try: the upstreams' own troubles (5xx, 429, timeouts, refused
 * credentials, breakers open, an unknown upstream model). Not the request's fault (the upstream found it invalid:
 * another model would too), not a client that left, not the gateway's own fault.
 */
function fallsBack(err: unknown): boolean {
  if (!(err instanceof GatewayError)) return false;
  return err.kind === "upstream" || err.kind === "timeout" || err.kind === "unavailable" || err.kind === "rate_limit";
}

/** Lists the client parameters a translation left out (hints with no equivalent, tools the upstream cannot run). */
export const DROPPED_HEADER = "x-modelgate-dropped";

/** The traits of a provider whose streams carry their usage unasked (Provider.streamUsageUnasked: Mistral). */
const STREAM_USAGE_UNASKED: UpstreamTraits = Object.freeze({ streamUsageUnasked: true });

/** The client's own vendor headers (beta flags, API version) for an upstream of its protocol; null when none. */
function sameProtocolHeaders(client: ProtocolAdapter, req: IncomingMessage): Record<string, string> | null {
  const forwards = client.passthrough?.forwardsHeader;
  if (!forwards) return null;
  let out: Record<string, string> | null = null;
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || !forwards(name)) continue;
    (out ??= {})[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/**
 * The client's query parameters (`?beta=true`) appended to a same-protocol upstream path, except the key
 * (`?key=`, the gateway's, never the upstream's) and those the path sets itself (Gemini's `alt`).
 */
export function withClientQuery(path: string, url: string | undefined): string {
  const q = url?.indexOf("?") ?? -1;
  if (q === -1 || url === undefined) return path;
  const qp = path.indexOf("?");
  const own = new URLSearchParams(qp === -1 ? "" : path.slice(qp + 1));
  const extra = new URLSearchParams();
  for (const [k, v] of new URLSearchParams(url.slice(q + 1)))
    if (k !== "key" && k !== "alt" && !own.has(k)) extra.append(k, v);
  const s = extra.toString();
  return s === "" ? path : `${path}${qp === -1 ? "?" : "&"}${s}`;
}
