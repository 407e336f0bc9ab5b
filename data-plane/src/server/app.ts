import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import { checkKeyAccess, isModelAllowed } from "../policy/check.ts";
import {
  type ClientEndpoint,
  type ClientRoute,
  type ProtocolAdapter,
  type StoredOperation,
  adapters,
  openai,
  protocols,
} from "../protocols/index.ts";
import { decodePathSegment } from "../protocols/routes.ts";
import { rateLimitError, rateLimitHeaders } from "../ratelimit/headers.ts";
import { type Caller, identify, startLimits } from "./admission.ts";
import { keyHashFrom } from "./auth.ts";
import { parseJsonObject, readBody } from "./body.ts";
import type { DataPlaneOptions } from "./context.ts";
import { handleGenerate } from "./generate.ts";
import { newRequestId } from "./request-id.ts";
import { handleEmbeddings } from "../embeddings/handle.ts";
import { unknownPath } from "./endpoints.ts";
import { sendError, sendJson, setRequestId } from "./respond.ts";
import { tokensFromChars } from "../usage/record.ts";

const clients = Object.values(protocols);
const models = /^\/(v1|v1beta)\/models(?:\/([^/:]+))?$/;

interface Matched {
  client: ProtocolAdapter;
  endpoint: ClientEndpoint;
  route: ClientRoute;
}

/** The adapter endpoint a path belongs to (whatever the method: a wrong method is that protocol's 405). */
function matchEndpoint(path: string, method: string | undefined, query: URLSearchParams | null): Matched | null {
  let other: Matched | null = null;
  // Registry order (OpenAI chat first): the commonest route is matched by the first string compare.
  for (const client of clients) {
    for (const endpoint of client.endpoints) {
      const route = endpoint.match(path, query);
      if (route === null) continue;
      if (endpoint.method === method) return { client, endpoint, route };
      other ??= { client, endpoint, route };
    }
  }
  return other;
}

/** Which protocol a protocol-neutral request (GET /v1/models, an unknown path) speaks, from its path and headers. */
const protocolOf = (req: IncomingMessage, path: string, query: URLSearchParams | null): ProtocolAdapter =>
  adapters.find((a) => a.speaks?.(req.headers, path, query)) ?? openai;

/**
 * The data plane's request handler. Returns false for paths it does not own (so the embedded process can
 * hand them to the control plane and console); `strict` makes it answer every path itself. Each protocol's
 * adapter declares its routes; this file knows none of them.
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
        sendJson(res, 401, '{"error":"a bearer token is required (MODELGATE_METRICS_TOKEN)"}', {
          "www-authenticate": "Bearer",
        });
        return true;
      }
      if (path === "/metrics") {
        // The customer port serves /metrics only to the token, unless the operator chose open metrics.
        if (access === "anonymous" && !opts.metricsOpen) {
          sendJson(
            res,
            401,
            '{"error":"/metrics needs a bearer token: set MODELGATE_METRICS_TOKEN (or MODELGATE_METRICS_OPEN=1 for open metrics)"}',
            { "www-authenticate": "Bearer" },
          );
          return true;
        }
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
          // what this replica holds, and whether a full load is in progress (it serves throughout)
          policy: {
            ...opts.store.size,
            loading: opts.store.loading,
            fullLoads: opts.store.fullLoads,
            lastFullLoadMs: opts.store.lastFullLoadMs,
          },
          // The operator's upstream names only to a caller with the token; anyone else sees how many are out.
          ...(access === "full"
            ? { upstreams }
            : { upstreamsNotClosed: Object.values(upstreams).filter((s) => s !== "closed").length }),
          // Fail static: a replica whose Redis is away still serves (ready) from its last snapshot; this says so.
          dependencies: opts.dependencies?.() ?? {},
        }),
      );
      return true;
    }
    const ours =
      path === "/v1" ||
      path === "/v1beta" ||
      path.startsWith("/v1/") ||
      path.startsWith("/v1beta/") ||
      path.startsWith("//");
    if (!ours && !strict) return false;

    const requestId = newRequestId();
    setRequestId(res, requestId);
    opts.metrics.loopWatch.call(res);
    // The protocol a request speaks is its endpoint's; guessed from its path and headers only when it has none.
    let client: ProtocolAdapter | null = null;
    try {
      const m = matchEndpoint(path, req.method, query);
      if (m) {
        client = m.client;
        allow(req, path, m.endpoint.method);
        switch (m.endpoint.op) {
          case "generate":
            await handleGenerate(opts, req, res, requestId, { client, route: m.route, queryKey: query?.get("key") });
            return true;
          case "count_tokens":
            await countTokens(opts, req, res, client);
            return true;
          case "embed":
            await handleEmbeddings(opts, req, res, requestId, { client, route: m.route, queryKey: query?.get("key") });
            return true;
          case "retrieve":
          case "delete":
          case "list_input":
            await stored(opts, req, res, client, m.endpoint.op, m.route.id ?? "", query);
            return true;
        }
      }
      const list = models.exec(path);
      client ??= protocolOf(req, path, query);
      if (list) {
        allow(req, path, "GET");
        const caller = admitted(identify(opts, keyHashFrom(req.headers, client.keySources, query?.get("key")), req));
        const limits = await takeRequestLimit(opts, caller);
        const visible = Object.values(opts.store.current.models).filter((m) => isModelAllowed(caller.key, m.id));
        if (list[2] !== undefined) {
          const id = decodePathSegment(list[2]).replace(/^models\//, "");
          const model = visible.find((m) => m.id === id);
          if (!model) {
            // refused, like a generation call for an unknown model: the request is given back
            await limits.cancel();
            throw new GatewayError(
              "not_found",
              "model_not_found",
              `The model '${id}' does not exist or this key may not call it. See GET /v1/models.`,
              "model",
            );
          }
          limits.release(); // answered in this turn: the slot is only held for the moment
          sendJson(res, 200, JSON.stringify(client.renderModel(model)), limits.headers);
        } else {
          limits.release();
          sendJson(res, 200, JSON.stringify(client.renderModelList(visible)), limits.headers);
        }
        return true;
      }
      throw unknownPath(path, req.method);
    } catch (err) {
      sendError(res, err, (client ?? protocolOf(req, path, query)).renderError, requestId);
      return true;
    }
  };
}

/** count_tokens: an estimate (4 characters a token) of what the request would send. */
async function countTokens(
  opts: DataPlaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  client: ProtocolAdapter,
): Promise<void> {
  const caller = admitted(identify(opts, keyHashFrom(req.headers, client.keySources), req));
  // Taken before the body is read: a key over its limit does not get to send megabytes to be counted.
  const limits = await takeRequestLimit(opts, caller);
  try {
    const body = parseJsonObject(await readBody(req, opts.maxBodyBytes));
    // max_tokens is Anthropic's required field, not needed to count.
    // Counted from the canonical form when the body translates; a body only its own vendor takes (roles, block
    // types the gateway does not know) is counted as it is written.
    let model: string;
    let text: string;
    try {
      const canonical = client.parseClientRequest({ max_tokens: 1, ...body, stream: false });
      model = canonical.model;
      text = JSON.stringify([canonical.system, canonical.messages, canonical.tools ?? []]);
    } catch (err) {
      if (!client.passthrough || !(err instanceof GatewayError)) throw err;
      model = client.passthrough.head(body).model;
      text = JSON.stringify([body.system ?? null, body.messages ?? null, body.tools ?? []]);
    }
    if (!opts.store.model(model) || !isModelAllowed(caller.key, model)) {
      throw new GatewayError(
        "not_found",
        "model_not_found",
        `The model '${model}' does not exist. Use a full model ID from GET /v1/models.`,
        "model",
      );
    }
    sendJson(res, 200, JSON.stringify({ input_tokens: tokensFromChars(text.length) }), limits.headers);
  } finally {
    limits.release();
  }
}

/** A kept answer of a stateful protocol (the Responses API's /v1/responses/{id}…): the caller's account's only. */
async function stored(
  opts: DataPlaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  client: ProtocolAdapter,
  op: StoredOperation,
  id: string,
  query: URLSearchParams | null,
): Promise<void> {
  const caller = admitted(identify(opts, keyHashFrom(req.headers, client.keySources), req));
  const limits = await takeRequestLimit(opts, caller);
  try {
    const missing = () =>
      new GatewayError(
        "not_found",
        "not_found",
        opts.conversations
          ? `Response with id '${id}' not found.`
          : `Response with id '${id}' not found: this gateway does not keep responses.`,
        "response_id",
      );
    if (!opts.conversations || !client.renderStored) throw missing();
    const found = await opts.conversations.get(caller.account.id, id);
    if (!found || (op === "delete" && !(await opts.conversations.delete(caller.account.id, id)))) throw missing();
    sendJson(res, 200, JSON.stringify(client.renderStored(op, id, found.record, query)), limits.headers);
  } finally {
    limits.release();
  }
}

/**
 * Requests that use no model (count_tokens, the model list) still count against the key's and the
 * account's rate limits: one request and a concurrency slot for the moment they run, no tokens.
 */
async function takeRequestLimit(
  opts: DataPlaneOptions,
  caller: Caller,
): Promise<{ headers: Record<string, string>; release(): void; cancel(): Promise<void> }> {
  const result = await startLimits(opts, caller, 0, Date.now());
  if (!result.ok) throw rateLimitError(result);
  return {
    headers: rateLimitHeaders(result.info),
    release: () => void result.release(0),
    cancel: async () => void (await result.cancel()),
  };
}

/**
 * /readyz and /metrics: with MODELGATE_METRICS_TOKEN set, a caller without `Authorization: Bearer <token>`
 * is refused; without it, anyone gets the anonymous /readyz (no upstream names), and /metrics only with
 * MODELGATE_METRICS_OPEN=1.
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

/** A revoked or expired key, a disabled account or an address outside the allowlist reaches nothing. */
function admitted(caller: Caller): Caller {
  const refusal = checkKeyAccess({
    key: caller.key,
    account: caller.account,
    clientIp: caller.clientIp,
    now: Date.now(),
  });
  if (refusal) throw refusal;
  return caller;
}

function allow(req: IncomingMessage, path: string, method: string): void {
  if (req.method !== method) {
    throw new GatewayError(
      "invalid_request",
      "method_not_allowed",
      `Method ${req.method} is not allowed on ${path}; use ${method}.`,
      null,
      { allow: method },
      405,
    );
  }
}

const finiteOrNull = (n: number) => (Number.isFinite(n) ? n : null);
