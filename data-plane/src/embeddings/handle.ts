import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteSnapshot } from "../contract/index.ts";
import { GatewayError } from "../errors.ts";
import { emptyUsage } from "../protocols/canonical.ts";
import { protocols } from "../protocols/index.ts";
import { parseJsonLoose, unsupported } from "../protocols/shared.ts";
import { admit, cancelLimits, identify, startLimits } from "../server/admission.ts";
import { type KeySource, keyHashFrom } from "../server/auth.ts";
import { declaredLength, parseJsonObject, readBody } from "../server/body.ts";
import { Call } from "../server/call.ts";
import type { DataPlaneOptions } from "../server/context.ts";
import { sendError, sendJson } from "../server/respond.ts";
import type { AcquireResult } from "../ratelimit/types.ts";
import { CallAbort } from "../upstreams/call-abort.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import { type Outgoing, callUpstream } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";
import {
  type GeminiEmbedMethod,
  buildGeminiEmbeddingRequest,
  parseGeminiEmbeddingRequest,
  parseGeminiEmbeddingResponse,
  renamedGeminiBody,
  renderGeminiEmbeddings,
} from "./gemini.ts";
import {
  buildOpenAIEmbeddingRequest,
  parseOpenAIEmbeddingRequest,
  parseOpenAIEmbeddingResponse,
  renamedOpenAIBody,
  renderOpenAIEmbeddings,
} from "./openai.ts";
import type { EmbeddingProtocol, EmbeddingRequest, EmbeddingResult } from "./types.ts";

// The embeddings endpoints, on the same path as generation: key → body → policy and limits → routes (retries,
// failover, breaker) → answer → accounting. An upstream of the client's protocol gets the client's body (its
// name for the model changed when the route renames it); another protocol gets a translation.

export type EmbeddingEndpoint =
  { protocol: "openai" } | { protocol: "gemini"; model: string; method: GeminiEmbedMethod; queryKey: string | null };

const geminiEmbed = /^\/(v1|v1beta)\/models\/([^/:]+):(embedContent|batchEmbedContents)$/;

/** The embeddings endpoint a path names, or null. */
export function embeddingEndpoint(path: string, query: URLSearchParams | null): EmbeddingEndpoint | null {
  if (path === "/v1/embeddings") return { protocol: "openai" };
  const g = geminiEmbed.exec(path);
  if (!g) return null;
  let model: string;
  try {
    model = decodeURIComponent(g[2]!);
  } catch {
    model = g[2]!; // refused below as an unknown model
  }
  return {
    protocol: "gemini",
    model: model.replace(/^models\//, ""),
    method: g[3] as GeminiEmbedMethod,
    queryKey: query?.get("key") ?? null,
  };
}

const KEY_SOURCES: Record<EmbeddingProtocol, KeySource[]> = { openai: [], gemini: ["x-goog-api-key", "query"] };

/** The upstream protocol of a route, for embeddings: only OpenAI and Gemini upstreams make them. */
function embeddingProtocolOf(route: RouteSnapshot): EmbeddingProtocol {
  if (route.protocol === "openai" || route.protocol === "gemini") return route.protocol;
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
  const client = protocols[ep.protocol];
  const startedAt = Date.now();
  let call: Call | null = null;
  let limits: Promise<AcquireResult> | undefined;
  let admitted = false;
  try {
    if (req.method !== "POST") {
      throw new GatewayError(
        "invalid_request",
        "method_not_allowed",
        `Method ${req.method} is not allowed here; use POST.`,
        null,
        { allow: "POST" },
        405,
      );
    }
    const caller = identify(
      opts,
      keyHashFrom(req.headers, KEY_SOURCES[ep.protocol], ep.protocol === "gemini" ? ep.queryKey : null),
      req,
    );
    const declared = declaredLength(req, opts.maxBodyBytes);
    if (declared !== null) limits = startLimits(opts, caller, tokensFromChars(declared), startedAt);
    const raw = await readBody(req, opts.maxBodyBytes);
    const body = parseJsonObject(raw);
    let base64 = false;
    let canonical: EmbeddingRequest;
    if (ep.protocol === "openai") {
      const parsed = parseOpenAIEmbeddingRequest(body);
      canonical = parsed.request;
      base64 = parsed.base64;
    } else canonical = parseGeminiEmbeddingRequest(body, ep.method, ep.model);
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
      protocol: ep.protocol,
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
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });

    const outgoing = (route: RouteSnapshot): Outgoing => {
      const up = embeddingProtocolOf(route);
      const renamed = route.upstreamModel !== canonical.model;
      if (up === ep.protocol) {
        if (ep.protocol === "openai")
          return {
            path: "/embeddings",
            body: renamed ? JSON.stringify(renamedOpenAIBody(body, route.upstreamModel)) : raw,
          };
        const method = ep.protocol === "gemini" ? ep.method : "batchEmbedContents";
        const path = `/models/${encodeURIComponent(route.upstreamModel)}:${method}`;
        return { path, body: renamed ? JSON.stringify(renamedGeminiBody(body, method, route.upstreamModel)) : raw };
      }
      const first = canonical.untranslatable?.[0];
      if (first !== undefined)
        throw unsupported(
          first,
          up === "openai" ? "OpenAI" : "Gemini",
          "only an upstream of the client's own protocol can honour it",
        );
      const built =
        up === "openai"
          ? buildOpenAIEmbeddingRequest(canonical, route.upstreamModel)
          : buildGeminiEmbeddingRequest(canonical, route.upstreamModel);
      return { path: built.path, body: JSON.stringify(built.body) };
    };

    const answer = await callUpstream(opts, routes, outgoing, abort, caller.account.id);
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
    const up = embeddingProtocolOf(answer.route);
    try {
      if (parsed === undefined) throw new Error("not JSON");
      result = up === "openai" ? parseOpenAIEmbeddingResponse(parsed) : parseGeminiEmbeddingResponse(parsed);
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
    if (up === ep.protocol && answer.route.upstreamModel === canonical.model)
      out = text; // the upstream's bytes, read for usage only
    else if (ep.protocol === "openai") {
      if (up === "openai") out = JSON.stringify({ ...(parsed as Record<string, unknown>), model: canonical.model });
      else out = JSON.stringify(renderOpenAIEmbeddings(result, canonical.model, base64, promptTokens));
    } else out = up === "gemini" ? text : JSON.stringify(renderGeminiEmbeddings(result, ep.method));
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
