// A mock Anthropic Messages upstream speaking the real wire format: JSON messages, and streams of named
// events (`event: <type>\ndata: {json}\n\n`) in Anthropic's order: message_start, ping, per block
// content_block_start → content_block_delta* → content_block_stop, message_delta with usage, message_stop.
// Frames are written by hand here, not with the gateway's encoders, so the two cannot share a bug.

import type { ServerResponse } from "node:http";
import {
  DEFAULT_MOCK_KEY,
  type MockReply,
  type MockToolCall,
  type MockUpstream,
  type MockUpstreamOptions,
  defaultUsage,
  finishOf,
  fragments,
  nextReply,
  sleep,
  startScriptedMock,
} from "./script.ts";

const STOP_REASON = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
} as const;

const ERROR_TYPE: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

let counter = 0;
const requestId = (): string => `req_mock${(++counter).toString().padStart(6, "0")}`;

function sendError(res: ServerResponse, status: number, message: string, type?: string): void {
  const id = requestId();
  res.writeHead(status, { "content-type": "application/json", "request-id": id });
  res.end(
    JSON.stringify({
      type: "error",
      error: { type: type ?? ERROR_TYPE[status] ?? "api_error", message },
      request_id: id,
    }),
  );
}

/** Anthropic's usage; `splitCacheWrites` false leaves out cache_creation (only the total, as Bedrock states it). */
export function anthropicUsage(r: MockReply, splitCacheWrites = true) {
  const u = defaultUsage(r);
  const cached = u.cachedTokens ?? 0;
  const w5m = u.cacheWrite5mTokens ?? 0;
  const w1h = u.cacheWrite1hTokens ?? 0;
  return {
    // Anthropic's input_tokens excludes cache reads and writes.
    input_tokens: u.promptTokens - cached - w5m - w1h,
    cache_creation_input_tokens: w5m + w1h,
    cache_read_input_tokens: cached,
    ...(splitCacheWrites ? { cache_creation: { ephemeral_5m_input_tokens: w5m, ephemeral_1h_input_tokens: w1h } } : {}),
    // Anthropic counts thinking inside output_tokens.
    output_tokens: u.completionTokens + (u.reasoningTokens ?? 0),
  };
}

const toolId = (i: number, id?: string): string => id ?? `toolu_mock${i.toString().padStart(2, "0")}`;

/** How an upstream names what it renders in Anthropic's shapes. */
export interface AnthropicNaming {
  /** The message's id. */
  id: string;
  model: string;
  toolId: (i: number, id?: string) => string;
  splitCacheWrites?: boolean;
}

/** A whole Messages answer. */
export function anthropicMessage(r: MockReply, o: AnthropicNaming): Record<string, unknown> {
  const content: Record<string, unknown>[] = [];
  if (r.thinking)
    content.push({ type: "thinking", thinking: r.thinking.join(""), signature: r.signature ?? "mock-signature" });
  if (r.text) content.push({ type: "text", text: r.text.join("") });
  (r.toolCalls ?? []).forEach((c, i) =>
    content.push({ type: "tool_use", id: o.toolId(i, c.id), name: c.name, input: c.arguments }),
  );
  return {
    id: o.id,
    type: "message",
    role: "assistant",
    model: o.model,
    content,
    stop_reason: STOP_REASON[finishOf(r)],
    stop_sequence: null,
    usage: anthropicUsage(r, o.splitCacheWrites),
  };
}

/** A thinking block's stream events at `index`, opened with `start` (the upstream's own empty block). */
export function thinkingEvents(
  thinking: string[],
  signature: string | undefined,
  index: number,
  start: Record<string, unknown>,
): Record<string, unknown>[] {
  return [
    { type: "content_block_start", index, content_block: start },
    ...thinking.map((t) => ({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: t } })),
    {
      type: "content_block_delta",
      index,
      delta: { type: "signature_delta", signature: signature ?? "mock-signature" },
    },
    { type: "content_block_stop", index },
  ];
}

/** A tool call's stream events at `index`, its input in fragments after `opening` ones. */
export function toolUseEvents(
  c: MockToolCall,
  id: string,
  index: number,
  opening: string[],
): Record<string, unknown>[] {
  return [
    { type: "content_block_start", index, content_block: { type: "tool_use", id, name: c.name, input: {} } },
    ...[...opening, ...fragments(JSON.stringify(c.arguments))].map((f) => ({
      type: "content_block_delta",
      index,
      delta: { type: "input_json_delta", partial_json: f },
    })),
    { type: "content_block_stop", index },
  ];
}

/** The stream's closing message_delta. */
export const messageDelta = (r: MockReply, outputTokens: number): Record<string, unknown> => ({
  type: "message_delta",
  delta: { stop_reason: STOP_REASON[finishOf(r)], stop_sequence: null },
  usage: { output_tokens: outputTokens },
});

const frame = (data: Record<string, unknown>): string =>
  `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

async function stream(res: ServerResponse, r: MockReply, model: string): Promise<void> {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "request-id": requestId(),
  });
  const write = async (data: Record<string, unknown>) => {
    res.write(frame(data));
    if (r.delayMs) await sleep(r.delayMs);
  };
  const usage = anthropicUsage(r);
  await write({
    type: "message_start",
    message: {
      id: "msg_mock01",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  await write({ type: "ping" });
  let index = 0;
  if (r.thinking) {
    const start = { type: "thinking", thinking: "", signature: "" };
    for (const e of thinkingEvents(r.thinking, r.signature, index, start)) await write(e);
    index++;
  }
  if (r.text) {
    await write({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const [n, t] of r.text.entries()) {
      if (r.midStreamError && n === (r.midStreamError.afterChunks ?? 1)) {
        await write({
          type: "error",
          error: { type: r.midStreamError.type ?? "overloaded_error", message: r.midStreamError.message },
        });
        res.end();
        return;
      }
      if (r.dropAfterChunks !== undefined && n === r.dropAfterChunks) {
        res.destroy();
        return;
      }
      await write({ type: "content_block_delta", index, delta: { type: "text_delta", text: t } });
    }
    await write({ type: "content_block_stop", index });
    index++;
  }
  if (r.midStreamError && (r.text?.length ?? 0) <= (r.midStreamError.afterChunks ?? 1)) {
    await write({
      type: "error",
      error: { type: r.midStreamError.type ?? "overloaded_error", message: r.midStreamError.message },
    });
    res.end();
    return;
  }
  for (const [i, c] of (r.toolCalls ?? []).entries()) {
    // Anthropic opens every tool input with an empty fragment.
    for (const e of toolUseEvents(c, toolId(i, c.id), index, [""])) await write(e);
    index++;
  }
  if (r.holdFinal) await r.holdFinal;
  await write(messageDelta(r, usage.output_tokens));
  await write({ type: "message_stop" });
  res.end();
}

/** Starts the mock. Its `url` ends in /v1, as an Anthropic route's base URL does. */
export async function startAnthropicUpstream(opts: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const apiKey = opts.apiKey ?? DEFAULT_MOCK_KEY;
  return startScriptedMock(
    opts,
    "/v1",
    async (mock, recorded, req, res): Promise<void> => {
      const bearer = req.headers.authorization?.startsWith("Bearer ") ? req.headers.authorization.slice(7) : undefined;
      if (req.headers["x-api-key"] !== apiKey && bearer !== apiKey) return sendError(res, 401, "invalid x-api-key");
      // The path without its query: Anthropic's API takes the SDK's `?beta=true` (Claude Code sends it).
      if (req.method !== "POST" || new URL(req.url ?? "", "http://mock").pathname !== "/v1/messages")
        return sendError(res, 404, `Not found: ${req.url ?? ""}`);
      if (typeof req.headers["anthropic-version"] !== "string") {
        return sendError(res, 400, "anthropic-version: header is required");
      }
      const b = (recorded.body ?? {}) as { model?: unknown; max_tokens?: unknown; stream?: unknown };
      if (typeof b.max_tokens !== "number") return sendError(res, 400, "max_tokens: Field required");
      const model = typeof b.model === "string" ? b.model : "claude-mock";
      const r = nextReply(mock, recorded);
      if (r.error) return sendError(res, r.error.status, r.error.message, r.error.type);
      if (b.stream === true) return stream(res, r, model);
      res.writeHead(200, { "content-type": "application/json", "request-id": requestId() });
      res.end(JSON.stringify(anthropicMessage(r, { id: "msg_mock01", model, toolId })));
    },
    (res, err) => sendError(res, 500, String(err)),
  );
}
