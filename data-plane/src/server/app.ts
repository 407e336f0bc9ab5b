import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import { checkKeyAccess, isModelAllowed } from "../policy/check.ts";
import { type ProtocolName, protocols } from "../protocols/index.ts";
import { rateLimitError, rateLimitHeaders } from "../ratelimit/headers.ts";
import { type Caller, identify, startLimits } from "./admission.ts";
import { type KeySource, keyHashFrom } from "./auth.ts";
import { parseJsonObject, readBody } from "./body.ts";
import type { DataPlaneOptions } from "./context.ts";
import { embeddingEndpoint, handleEmbeddings } from "../embeddings/handle.ts";
import { unknownPath } from "./endpoints.ts";
import { type Endpoint, handleGenerate } from "./generate.ts";
import { renderModel, renderModelList } from "./models.ts";
import { newRequestId } from "./request-id.ts";
import { sendError, sendJson, setRequestId } from "./respond.ts";
import { tokensFromChars } from "../usage/record.ts";

const ANTHROPIC_KEYS: KeySource[] = ["x-api-key"];
const GEMINI_KEYS: KeySource[] = ["x-goog-api-key", "query"];
const gemini = /^\/(v1|v1beta)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const modelPath = /^\/(v1|v1beta)\/models\/([^/:]+)$/;

/** Which protocol a protocol-neutral request (GET /v1/models) speaks, from its path and headers. */
function protocolOf(req: IncomingMessage, path: string, query: URLSearchParams | null): ProtocolName {
  if (path === "/v1/chat/completions") return "openai";
  if (path.startsWith("/v1/messages")) return "anthropic";
  if (path.startsWith("/v1beta/") || req.headers["x-goog-api-key"] !== undefined || query?.has("key")) return "gemini";
  if (req.headers["anthropic-version"] !== undefined || req.headers["x-api-key"] !== undefined) return "anthropic";
  return "openai";
}

const keySourcesOf = (p: ProtocolName): KeySource[] => (p === "anthropic" ? ANTHROPIC_KEYS : p === "gemini" ? GEMINI_KEYS : []);

/**
 * The data plane's request handler. Returns false for paths it does not own (so the embedded process can
 * hand them to the control plane and console); `strict` makes it answer every path itself.
 */
export function createDataPlaneHandler(opts: DataPlaneOptions, strict: boolean) {
  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? null : new URLSearchParams(url.slice(q + 1));
    if (path === "/healthz") {
      sendJson(res, 200, '{"status":"ok"}');
      return true;
    }
    if (path === "/readyz" || (path === "/metrics" && req.method === "GET")) {
      const access = opsAccess(req, opts.opsToken);
      if (access === "refused") {
        sendJson(res, 401, '{"error":"a bearer token is required (MODELGATE_METRICS_TOKEN)"}', { "www-authenticate": "Bearer" });
        return true;
      }
      if (path === "/metrics") {
        const body = await opts.metrics.registry.metrics();
        res.writeHead(200, { "content-type": opts.metrics.registry.contentType });
        res.end(body);
        return true;
      }
      const age = opts.store.ageMs();
      const ok = opts.ready() && opts.store.loaded;
      const upstreams = opts.breakers.states(Date.now());
      sendJson(
        res,
        ok ? 200 : 503,
        JSON.stringify({
          status: ok ? "ready" : "not ready",
          snapshotVersion: opts.store.version,
          // since this replica last confirmed its snapshot with Redis
          snapshotAgeMs: Number.isFinite(age) ? age : null,
          // since the control plane built it: grows while the control plane is stopped or frozen
          publishedSnapshotAgeMs: finiteOrNull(opts.store.publishedAgeMs()),
          controlPlane: opts.store.controlPlane(),
          // The operator's upstream names only to a caller with the token; anyone else sees how many are out.
          ...(access === "full" ? { upstreams } : { upstreamsNotClosed: Object.values(upstreams).filter((s) => s !== "closed").length }),
          // Fail static: a replica whose Redis is away still serves (ready) from its last snapshot; this says so.
          dependencies: opts.dependencies?.() ?? {},
        }),
      );
      return true;
    }
    const ours = path === "/v1" || path === "/v1beta" || path.startsWith("/v1/") || path.startsWith("/v1beta/") || path.startsWith("//");
    if (!ours && !strict) return false;

    const requestId = newRequestId();
    setRequestId(res, requestId);
    const protocol = protocolOf(req, path, query);
    try {
      if (path === "/v1/chat/completions") {
        allow(req, path, "POST");
        await handleGenerate(opts, req, res, requestId, { protocol: "openai", keySources: [] });
        return true;
      }
      if (path === "/v1/messages") {
        allow(req, path, "POST");
        await handleGenerate(opts, req, res, requestId, { protocol: "anthropic", keySources: ANTHROPIC_KEYS });
        return true;
      }
      if (path === "/v1/messages/count_tokens") {
        allow(req, path, "POST");
        await countTokens(opts, req, res);
        return true;
      }
      const embeddings = embeddingEndpoint(path, query);
      if (embeddings) {
        await handleEmbeddings(opts, req, res, requestId, embeddings);
        return true;
      }
      const g = gemini.exec(path);
      if (g) {
        const stream = g[3] === "streamGenerateContent";
        const route = { model: decodePathSegment(g[2]!), stream };
        const ep: Endpoint = { protocol: "gemini", keySources: GEMINI_KEYS, queryKey: query?.get("key"), route, jsonArray: stream && query?.get("alt") !== "sse" };
        try {
          allow(req, path, "POST");
        } catch (err) {
          sendError(res, err, protocols.gemini.renderError, requestId);
          return true;
        }
        await handleGenerate(opts, req, res, requestId, ep);
        return true;
      }
      if (path === "/v1/models" || path === "/v1beta/models" || modelPath.test(path)) {
        allow(req, path, "GET");
        const caller = admitted(identify(opts, keyHashFrom(req.headers, keySourcesOf(protocol), query?.get("key")), req));
        const limits = await takeRequestLimit(opts, caller);
        const visible = Object.values(opts.store.current.models).filter((m) => isModelAllowed(caller.key, m.id));
        const one = modelPath.exec(path);
        if (one) {
          const id = decodePathSegment(one[2]!).replace(/^models\//, "");
          const model = visible.find((m) => m.id === id);
          if (!model) {
            // refused, like a generation call for an unknown model: the request is given back
            await limits.cancel();
            throw new GatewayError("not_found", "model_not_found", `The model '${id}' does not exist or this key may not call it. See GET /v1/models.`, "model");
          }
          limits.release(); // answered in this turn: the slot is only held for the moment
          sendJson(res, 200, JSON.stringify(renderModel(protocol, model)), limits.headers);
        } else {
          limits.release();
          sendJson(res, 200, JSON.stringify(renderModelList(protocol, visible)), limits.headers);
        }
        return true;
      }
      throw unknownPath(path, req.method);
    } catch (err) {
      sendError(res, err, protocols[protocol].renderError, requestId);
      return true;
    }
  };
}

/** Anthropic's count_tokens: an estimate (4 characters a token) of what the request would send. */
async function countTokens(opts: DataPlaneOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const caller = admitted(identify(opts, keyHashFrom(req.headers, ANTHROPIC_KEYS), req));
  // Taken before the body is read: a key over its limit does not get to send megabytes to be counted.
  const limits = await takeRequestLimit(opts, caller);
  try {
    const body = parseJsonObject(await readBody(req, opts.maxBodyBytes));
    const canonical = protocols.anthropic.parseClientRequest({ max_tokens: 1, ...body, stream: false });
    if (!opts.store.model(canonical.model) || !isModelAllowed(caller.key, canonical.model)) {
      throw new GatewayError("not_found", "model_not_found", `The model '${canonical.model}' does not exist. Use a full model ID from GET /v1/models.`, "model");
    }
    const text = JSON.stringify([canonical.system, canonical.messages, canonical.tools ?? []]);
    sendJson(res, 200, JSON.stringify({ input_tokens: tokensFromChars(text.length) }), limits.headers);
  } finally {
    limits.release();
  }
}

/**
 * Requests that use no model (count_tokens, the model list) still count against the key's and the
 * account's rate limits: one request and a concurrency slot for the moment they run, no tokens.
 */
async function takeRequestLimit(opts: DataPlaneOptions, caller: Caller): Promise<{ headers: Record<string, string>; release(): void; cancel(): Promise<void> }> {
  const result = await startLimits(opts, caller, 0, Date.now());
  if (!result.ok) throw rateLimitError(result);
  return { headers: rateLimitHeaders(result.info), release: () => void result.release(0), cancel: async () => void (await result.cancel()) };
}

/**
 * /readyz and /metrics: with MODELGATE_METRICS_TOKEN set, a caller without `Authorization: Bearer <token>`
 * is refused; without it, anyone gets /metrics and the anonymous /readyz (no upstream names).
 */
function opsAccess(req: IncomingMessage, token: string | null | undefined): "full" | "anonymous" | "refused" {
  const auth = req.headers.authorization;
  if (!token) return "anonymous";
  if (auth !== undefined && auth.startsWith("Bearer ") && sameSecret(auth.slice(7), token)) return "full";
  return "refused";
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A path segment's percent-escapes decoded; a malformed escape is the caller's 400, not a server error. */
function decodePathSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new GatewayError("invalid_request", "invalid_path", `The path segment '${s.slice(0, 200)}' has a malformed percent-escape.`);
  }
}

/** A revoked or expired key, a disabled account or an address outside the allowlist reaches nothing. */
function admitted(caller: Caller): Caller {
  const refusal = checkKeyAccess({ key: caller.key, account: caller.account, clientIp: caller.clientIp, now: Date.now() });
  if (refusal) throw refusal;
  return caller;
}

function allow(req: IncomingMessage, path: string, method: string): void {
  if (req.method !== method) {
    throw new GatewayError("invalid_request", "method_not_allowed", `Method ${req.method} is not allowed on ${path}; use ${method}.`, null, { allow: method }, 405);
  }
}

const finiteOrNull = (n: number) => (Number.isFinite(n) ? n : null);
