import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccountSnapshot, KeySnapshot, ModelSnapshot, Price, RouteSnapshot } from "../contract/index.ts";
import { open } from "../crypto/secret-box.ts";
import { GatewayError } from "../errors.ts";
import { renderOpenAIError } from "../protocols/openai/errors.ts";
import { SseParser } from "../protocols/sse.ts";
import { orderRoutes } from "../upstreams/pick-route.ts";
import type { UpstreamResponse } from "../upstreams/transport.ts";
import { type CallRecord, estimateTokens, type TokenUsage, usageEvent, zeroUsage } from "../usage/record.ts";
import { keyHashFrom, unknownKey } from "./auth.ts";
import { parseJsonObject, readBody } from "./body.ts";
import type { DataPlaneOptions } from "./context.ts";
import { sendError, sendJson } from "./respond.ts";

interface Authorised {
  key: KeySnapshot;
  account: AccountSnapshot;
}

/** Key → policy. Runs against the in-memory snapshot only. */
export function authorise(opts: DataPlaneOptions, keyHash: string, now: number): Authorised {
  const key = opts.store.key(keyHash);
  if (!key) throw unknownKey();
  if (key.status === "revoked") throw new GatewayError("authentication", "key_revoked", "This API key has been revoked.");
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) {
    throw new GatewayError("authentication", "key_expired", `This API key expired at ${key.expiresAt}.`);
  }
  const account = opts.store.account(key.accountId);
  if (!account || account.status !== "active") {
    throw new GatewayError("permission", "account_disabled", "The account of this API key is disabled. Contact your account manager.");
  }
  if (key.quota !== null && BigInt(key.spent) >= BigInt(key.quota)) {
    throw new GatewayError("rate_limit", "insufficient_quota", "This API key has used its quota cap. Raise the cap in the console or use another key.");
  }
  if (BigInt(account.balance) <= 0n) {
    throw new GatewayError("payment_required", "insufficient_balance", "The account balance is exhausted. Top up the wallet to continue.");
  }
  return { key, account };
}

export function resolveModel(opts: DataPlaneOptions, auth: Authorised, modelId: string): ModelSnapshot {
  const model = opts.store.model(modelId);
  if (!model) {
    throw new GatewayError(
      "not_found",
      "model_not_found",
      `The model '${modelId}' does not exist. Use a full model ID from the model list (GET /v1/models), not a display name or abbreviation.`,
      "model",
    );
  }
  if (auth.key.allowedModels.length > 0 && !auth.key.allowedModels.includes(modelId)) {
    throw new GatewayError("permission", "model_not_allowed", `This API key may not call the model '${modelId}'.`, "model");
  }
  return model;
}

export const priceFor = (account: AccountSnapshot, model: ModelSnapshot): Price => account.contracts[model.id] ?? model.price;

function validateChatBody(body: Record<string, unknown>): { model: string; stream: boolean; includeUsage: boolean } {
  const bad = (param: string, message: string) => new GatewayError("invalid_request", "invalid_request", message, param);
  if (body.model === undefined) throw new GatewayError("invalid_request", "missing_required_parameter", "Missing required parameter: 'model'.", "model");
  if (typeof body.model !== "string" || body.model.length === 0) throw bad("model", "'model' must be a non-empty string.");
  if (body.messages === undefined) throw new GatewayError("invalid_request", "missing_required_parameter", "Missing required parameter: 'messages'.", "messages");
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad("messages", "'messages' must be a non-empty array.");
  body.messages.forEach((m: unknown, i) => {
    if (typeof m !== "object" || m === null || Array.isArray(m)) throw bad(`messages[${i}]`, `'messages[${i}]' must be an object.`);
    const role = (m as { role?: unknown }).role;
    if (typeof role !== "string") throw bad(`messages[${i}].role`, `'messages[${i}].role' must be a string.`);
    if (!["system", "developer", "user", "assistant", "tool", "function"].includes(role)) {
      throw bad(`messages[${i}].role`, `'messages[${i}].role' must be one of system, developer, user, assistant, tool; got '${role}'.`);
    }
  });
  for (const p of ["max_tokens", "max_completion_tokens", "n"] as const) {
    const v = body[p];
    if (v !== undefined && v !== null && (typeof v !== "number" || !Number.isInteger(v) || v < 1)) throw bad(p, `'${p}' must be a positive integer.`);
  }
  for (const p of ["temperature", "top_p"] as const) {
    const v = body[p];
    if (v !== undefined && v !== null && typeof v !== "number") throw bad(p, `'${p}' must be a number.`);
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") throw bad("stream", "'stream' must be a boolean.");
  const so = body.stream_options as { include_usage?: unknown } | undefined | null;
  return { model: body.model, stream: body.stream === true, includeUsage: so?.include_usage === true };
}

const clientIpOf = (req: IncomingMessage): string | null => req.socket.remoteAddress ?? null;

/** POST /v1/chat/completions from an OpenAI client. */
export async function handleOpenAIChat(opts: DataPlaneOptions, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
  const startedAt = Date.now();
  let call: CallRecord | null = null;
  let price: Price | null = null;
  try {
    const auth = authorise(opts, keyHashFrom(req.headers), startedAt);
    const body = parseJsonObject(await readBody(req, opts.maxBodyBytes));
    const { model: modelId, stream, includeUsage } = validateChatBody(body);
    const model = resolveModel(opts, auth, modelId);
    price = priceFor(auth.account, model);
    call = {
      requestId,
      keyId: auth.key.id,
      accountId: auth.account.id,
      model: model.id,
      protocol: "openai",
      upstream: null,
      stream,
      clientIp: clientIpOf(req),
      startedAt,
      firstByteAt: null,
    };
    const routes = orderRoutes(model.routes);
    const route = routes[0];
    if (!route) throw new GatewayError("unavailable", "no_upstream", `The model '${model.id}' has no available upstream right now.`);
    call.upstream = route.upstream;

    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const upstreamBody: Record<string, unknown> = { ...body, model: route.upstreamModel };
    if (stream) upstreamBody.stream_options = { ...(body.stream_options as object | undefined), include_usage: true };
    const upstream = await sendUpstream(opts, route, JSON.stringify(upstreamBody), abort.signal);

    if (upstream.status < 200 || upstream.status >= 300) {
      const err = await upstreamError(upstream);
      opts.usage.emit(usageEvent(call, zeroUsage(), price, err.status, err.code));
      sendError(res, err, renderOpenAIError, requestId);
      return;
    }
    if (stream) await relayStream(opts, res, upstream, call, price, model.id, includeUsage, route.upstreamModel);
    else await relayJson(opts, res, upstream, call, price, model.id);
  } catch (err) {
    const gw = sendError(res, err, renderOpenAIError, requestId);
    if (call && gw.kind !== "invalid_request") opts.usage.emit(usageEvent(call, zeroUsage(), price, gw.status, gw.code));
    if (!(err instanceof GatewayError)) opts.logger.error({ requestId, err }, "unexpected error");
  }
}

async function sendUpstream(opts: DataPlaneOptions, route: RouteSnapshot, body: string, signal: AbortSignal): Promise<UpstreamResponse> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (route.apiKeyEnc) headers.authorization = `Bearer ${open(opts.masterKey, route.apiKeyEnc)}`;
  const transport = route.protocol === "demo" ? opts.demo : opts.transport;
  try {
    return await transport.send({
      url: `${route.baseUrl.replace(/\/+$/, "")}/chat/completions`,
      headers,
      body,
      signal,
      connectTimeoutMs: route.connectTimeoutMs,
      firstByteTimeoutMs: route.firstByteTimeoutMs,
      idleTimeoutMs: route.idleTimeoutMs,
    });
  } catch (err) {
    if (signal.aborted) throw new GatewayError("invalid_request", "client_closed", "The client closed the connection.", null, {}, 499);
    const code = (err as { code?: string }).code ?? "";
    if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
      throw new GatewayError("timeout", "upstream_timeout", `The upstream '${route.upstream}' did not answer in time.`);
    }
    throw new GatewayError("upstream", "upstream_unreachable", `The upstream '${route.upstream}' could not be reached.`);
  }
}

/** An upstream refusal, re-shaped: client errors keep their status and message; the rest are the gateway's 502. */
async function upstreamError(upstream: UpstreamResponse): Promise<GatewayError> {
  const text = await upstream.text().catch(() => "");
  let message = "";
  try {
    message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? "";
  } catch {
    /* not JSON: use the status only */
  }
  const s = upstream.status;
  if (s === 429) return new GatewayError("rate_limit", "upstream_rate_limited", `The upstream is rate limiting: ${message || "try again later"}.`);
  if (s >= 400 && s < 500 && s !== 401 && s !== 403) {
    return new GatewayError("invalid_request", "upstream_invalid_request", message || `The upstream refused the request (${s}).`, null, {}, s);
  }
  return new GatewayError("upstream", "upstream_error", `The upstream failed (${s}).`);
}

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

const fromOpenAIUsage = (u: OpenAIUsage): TokenUsage => ({
  promptTokens: u.prompt_tokens ?? 0,
  completionTokens: u.completion_tokens ?? 0,
  cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
  reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? 0,
});

async function relayJson(opts: DataPlaneOptions, res: ServerResponse, upstream: UpstreamResponse, call: CallRecord, price: Price, modelId: string): Promise<void> {
  const text = await upstream.text();
  call.firstByteAt = Date.now();
  let parsed: { model?: string; usage?: OpenAIUsage | null; choices?: { message?: { content?: unknown; reasoning_content?: unknown } }[] };
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GatewayError("upstream", "upstream_bad_response", "The upstream answered with invalid JSON.");
  }
  let usage: TokenUsage;
  if (parsed.usage && typeof parsed.usage.prompt_tokens === "number") {
    usage = fromOpenAIUsage(parsed.usage);
  } else {
    // Every successful response carries usage; when the upstream leaves it out the gateway counts it.
    const content = (parsed.choices ?? []).map((c) => String(c.message?.content ?? "")).join("");
    usage = { ...zeroUsage(), completionTokens: estimateTokens(content) };
    parsed.usage = { prompt_tokens: 0, completion_tokens: usage.completionTokens, total_tokens: usage.completionTokens } as OpenAIUsage;
  }
  parsed.model = modelId;
  sendJson(res, 200, JSON.stringify(parsed));
  opts.usage.emit(usageEvent(call, usage, price, 200, null));
}

/**
 * Relays an OpenAI SSE stream chunk by chunk as it arrives. Each event is parsed once to read usage and to
 * put the client's model ID back; the usage-only chunk is dropped unless the client asked for it. If the
 * stream breaks before the upstream reported usage, the delivered text is counted, never nothing.
 */
async function relayStream(
  opts: DataPlaneOptions,
  res: ServerResponse,
  upstream: UpstreamResponse,
  call: CallRecord,
  price: Price,
  modelId: string,
  includeUsage: boolean,
  upstreamModel: string,
): Promise<void> {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.flushHeaders();
  const parser = new SseParser();
  let usage: TokenUsage | null = null;
  let delivered = "";
  let sawDone = false;
  const rewrite = upstreamModel !== modelId;
  const writeEvent = (data: string) => {
    if (data === "[DONE]") {
      sawDone = true;
      return;
    }
    let chunk: { model?: string; usage?: OpenAIUsage | null; choices?: { delta?: { content?: string | null; reasoning_content?: string | null } }[] };
    try {
      chunk = JSON.parse(data);
    } catch {
      return; // not JSON: nothing a client could use
    }
    if (chunk.usage) usage = fromOpenAIUsage(chunk.usage);
    const choices = chunk.choices ?? [];
    for (const c of choices) delivered += (c.delta?.content ?? "") + (c.delta?.reasoning_content ?? "");
    if (choices.length === 0 && chunk.usage && !includeUsage) return;
    if (!includeUsage && "usage" in chunk) delete chunk.usage;
    if (rewrite || !includeUsage) {
      if (chunk.model !== undefined) chunk.model = modelId;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    } else {
      res.write(`data: ${data}\n\n`);
    }
  };
  let status = 200;
  let errorCode: string | null = null;
  try {
    for await (const buf of upstream.body) {
      if (call.firstByteAt === null) call.firstByteAt = Date.now();
      for (const ev of parser.push(buf)) writeEvent(ev.data);
    }
    for (const ev of parser.flush()) writeEvent(ev.data);
    if (!sawDone && !usage) throw new Error("upstream stream ended early");
  } catch {
    if (res.destroyed) {
      status = 499;
      errorCode = "client_closed";
    } else {
      status = 502;
      errorCode = "upstream_stream_error";
      const err = new GatewayError("upstream", "upstream_stream_error", "The upstream stream failed before it finished.");
      res.write(`data: ${renderOpenAIError(err, call.requestId).body}\n\n`);
    }
  }
  if (!res.destroyed) {
    res.write("data: [DONE]\n\n");
    res.end();
  }
  const final: TokenUsage = usage ?? { ...zeroUsage(), completionTokens: estimateTokens(delivered) };
  // Delivered tokens are charged even when the stream broke off; a call that delivered nothing costs nothing.
  opts.usage.emit(usageEvent(call, final, price, status, errorCode, status === 200 || final.completionTokens > 0));
}
