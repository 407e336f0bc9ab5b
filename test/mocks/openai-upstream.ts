import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  DEFAULT_MOCK_KEY,
  type MockReply,
  type MockUpstream,
  type MockUpstreamOptions,
  type RecordedRequest as ScriptedRequest,
  defaultUsage,
  finishOf,
  fragments,
  mockEmbedding,
  mockTokens,
  nextReply,
  sleep,
  startScriptedMock,
} from "./script.ts";

// A mock OpenAI Chat Completions upstream speaking the real wire format (JSON and SSE with
// `data: {...}\n\n` frames, a usage-only chunk when include_usage is set, and `data: [DONE]`).

export interface OpenAIScript {
  content?: string;
  /** split the content into this many stream chunks (default: one per word) */
  chunks?: number;
  promptTokens?: number;
  completionTokens?: number;
  reasoningTokens?: number;
  cachedTokens?: number;
  finishReason?: "stop" | "length" | "tool_calls" | "content_filter";
  /** answer with this status and an OpenAI error body instead */
  status?: number;
  errorMessage?: string;
  /** omit usage entirely (non-streaming) or never send the usage chunk (streaming) */
  omitUsage?: boolean;
  /** stream: destroy the socket after this many content chunks */
  breakAfterChunks?: number;
  /** delay before the response head, and between stream chunks */
  delayMs?: number;
  chunkDelayMs?: number;
  /** the model name the upstream reports (a dated snapshot, say) instead of the one asked for */
  answerModel?: string;
  /** non-streaming: pretty-printed JSON, as OpenAI sends it */
  pretty?: boolean;
}

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

export interface OpenAIMock {
  url: string; // base URL ending in /v1
  requests: RecordedRequest[];
  /** scripts for the next calls, in order; afterwards `fallback` answers */
  queue: OpenAIScript[];
  fallback: OpenAIScript;
  close(): Promise<void>;
}

const split = (s: string, n?: number): string[] => {
  if (n === undefined) return s.split(/(?<= )/);
  const size = Math.ceil(s.length / n);
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
};

export async function startOpenAIMock(apiKey = "sk-upstream-test", port = 0): Promise<OpenAIMock> {
  const mock: OpenAIMock = {
    url: "",
    requests: [],
    queue: [],
    fallback: { content: "Hello there! How can I help?", promptTokens: 12, completionTokens: 8 },
    close: async () => undefined,
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
    } catch {
      /* recorded as empty */
    }
    mock.requests.push({ path: req.url ?? "", headers: req.headers, body });
    const fail = (status: number, message: string, type = "invalid_request_error", code: string | null = null) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message, type, param: null, code } }));
    };
    if (req.headers.authorization !== `Bearer ${apiKey}`)
      return fail(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key");
    if (req.url !== "/v1/chat/completions" || req.method !== "POST") return fail(404, `Unknown path ${req.url}`);
    const s = { ...mock.fallback, ...(mock.queue.shift() ?? {}) };
    if (s.delayMs) await new Promise((r) => setTimeout(r, s.delayMs));
    if (s.status && s.status !== 200)
      return fail(
        s.status,
        s.errorMessage ?? "upstream failure",
        s.status === 429 ? "rate_limit_error" : "server_error",
      );
    const content = s.content ?? "";
    const model = s.answerModel ?? String(body.model);
    const usage = {
      prompt_tokens: s.promptTokens ?? 10,
      completion_tokens: s.completionTokens ?? 5,
      total_tokens: (s.promptTokens ?? 10) + (s.completionTokens ?? 5),
      prompt_tokens_details: { cached_tokens: s.cachedTokens ?? 0 },
      completion_tokens_details: { reasoning_tokens: s.reasoningTokens ?? 0 },
    };
    const id = `chatcmpl-mock${mock.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          {
            id,
            object: "chat.completion",
            created,
            model,
            choices: [
              {
                index: 0,
                message: { role: "assistant", content, refusal: null },
                logprobs: null,
                finish_reason: s.finishReason ?? "stop",
              },
            ],
            ...(s.omitUsage ? {} : { usage }),
            system_fingerprint: "fp_mock",
          },
          null,
          s.pretty ? 2 : undefined,
        ),
      );
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    const frame = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_mock", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
    res.write(frame({ role: "assistant", content: "", refusal: null }, null));
    const parts = split(content, s.chunks);
    for (let i = 0; i < parts.length; i++) {
      if (s.breakAfterChunks !== undefined && i >= s.breakAfterChunks) {
        // Let what was written reach the wire first: a reset right after synchronous writes would drop the
        // head too, and the proxy would see a connection failure before any byte instead of a broken stream.
        await new Promise<void>((r) => res.write("", () => r()));
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        return;
      }
      if (s.chunkDelayMs) await new Promise((r) => setTimeout(r, s.chunkDelayMs));
      res.write(frame({ content: parts[i] }, null));
    }
    res.write(frame({}, s.finishReason ?? "stop"));
    if (includeUsage && !s.omitUsage) {
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_mock", choices: [], usage })}\n\n`,
      );
    }
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  mock.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return mock;
}

// ---- The same upstream driven by the shared script (script.ts), as the Anthropic and Gemini mocks are ----
// Reasoning text goes out as `reasoning_content` (DeepSeek/vLLM style: OpenAI itself returns none, only the
// count); `completion_tokens` includes reasoning tokens, as OpenAI's does. A mid-stream error is a
// `data: {"error":{…}}` event after which the connection closes (no [DONE]).

const OPENAI_ERROR_TYPE: Record<number, string> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  403: "permission_error",
  404: "invalid_request_error",
  429: "rate_limit_error",
};

const openaiError = (status: number, message: string, type?: string): string =>
  JSON.stringify({
    error: {
      message,
      type: type ?? OPENAI_ERROR_TYPE[status] ?? "server_error",
      param: null,
      code: status === 401 ? "invalid_api_key" : null,
    },
  });

function openaiUsage(r: MockReply): Record<string, unknown> {
  const u = defaultUsage(r);
  const completion = u.completionTokens + (u.reasoningTokens ?? 0);
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: completion,
    total_tokens: u.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: u.cachedTokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: u.reasoningTokens ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const callId = (i: number, id?: string): string => id ?? `call_mock${i.toString().padStart(2, "0")}`;

/** Starts the scripted mock. Its `url` ends in /v1, as an OpenAI route's base URL does. */
export async function startOpenAIUpstream(opts: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const apiKey = opts.apiKey ?? DEFAULT_MOCK_KEY;
  // Response ids this upstream handed out with store on: previous_response_id must name one of them.
  const issued = new Set<string>();
  return startScriptedMock(
    opts,
    "/v1",
    async (mock, recorded, req, res): Promise<void> => {
      const fail = (status: number, message: string, type?: string) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(openaiError(status, message, type));
      };
      if (req.headers.authorization !== `Bearer ${apiKey}`) return fail(401, "Incorrect API key provided.");
      if (req.method === "POST" && req.url === "/v1/embeddings") return embeddings(mock, recorded, res, fail);
      if (req.method === "POST" && req.url === "/v1/responses") return respond(mock, recorded, res, issued, fail);
      if (req.method !== "POST" || req.url !== "/v1/chat/completions")
        return fail(404, `Unknown request URL: ${req.method ?? ""} ${req.url ?? ""}.`);
      const b = (recorded.body ?? {}) as {
        model?: unknown;
        stream?: unknown;
        stream_options?: { include_usage?: unknown };
      };
      if (typeof b.model !== "string") return fail(400, "you must provide a model parameter");
      const r = nextReply(mock, recorded);
      if (r.error) return fail(r.error.status, r.error.message, r.error.type);
      const model = b.model;
      const id = `chatcmpl-mock${mock.requests.length}`;
      const created = Math.floor(Date.now() / 1000);
      const calls = r.toolCalls ?? [];
      if (b.stream !== true) {
        const text = r.text?.join("");
        const message: Record<string, unknown> = {
          role: "assistant",
          content: text ?? (calls.length > 0 ? null : ""),
          refusal: null,
          annotations: [],
        };
        if (r.thinking) message.reasoning_content = r.thinking.join("");
        if (calls.length > 0) {
          message.tool_calls = calls.map((c, i) => ({
            id: callId(i, c.id),
            type: "function",
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          }));
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id,
            object: "chat.completion",
            created,
            model,
            choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(r) }],
            usage: openaiUsage(r),
            service_tier: "default",
            system_fingerprint: "fp_mock",
          }),
        );
        return;
      }
      const includeUsage = b.stream_options?.include_usage === true;
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      const write = async (choices: unknown[], usage?: unknown) => {
        const chunk: Record<string, unknown> = {
          id,
          object: "chat.completion.chunk",
          created,
          model,
          service_tier: "default",
          system_fingerprint: "fp_mock",
          choices,
        };
        if (includeUsage) chunk.usage = usage ?? null;
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        if (r.delayMs) await sleep(r.delayMs);
      };
      const delta = (d: Record<string, unknown>, finish: string | null = null) =>
        write([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
      const midError = () => {
        res.end(
          `data: ${openaiError(500, r.midStreamError?.message ?? "error", r.midStreamError?.type ?? "server_error")}\n\n`,
        );
      };
      await delta({ role: "assistant", content: "", refusal: null });
      for (const t of r.thinking ?? []) await delta({ reasoning_content: t });
      const texts = r.text ?? [];
      for (const [n, t] of texts.entries()) {
        if (r.midStreamError && n === (r.midStreamError.afterChunks ?? 1)) return midError();
        if (r.dropAfterChunks !== undefined && n === r.dropAfterChunks) return void res.destroy();
        await delta({ content: t });
      }
      if (r.midStreamError && texts.length <= (r.midStreamError.afterChunks ?? 1)) return midError();
      for (const [i, c] of calls.entries()) {
        await delta({
          tool_calls: [{ index: i, id: callId(i, c.id), type: "function", function: { name: c.name, arguments: "" } }],
        });
        for (const f of fragments(JSON.stringify(c.arguments)))
          await delta({ tool_calls: [{ index: i, function: { arguments: f } }] });
      }
      await delta({}, finishOf(r));
      if (includeUsage) await write([], openaiUsage(r));
      res.end("data: [DONE]\n\n");
    },
    (res, err) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(openaiError(500, String(err)));
    },
  );
}

/**
 * POST /v1/embeddings as OpenAI answers it: one vector per input (text, or token ids), `dimensions` honoured,
 * `encoding_format: "base64"` as little-endian float32, usage with prompt_tokens only. A scripted error reply
 * answers instead.
 */
function embeddings(
  mock: MockUpstream,
  recorded: ScriptedRequest,
  res: ServerResponse,
  fail: (status: number, message: string, type?: string) => void,
): void {
  const b = (recorded.body ?? {}) as {
    model?: unknown;
    input?: unknown;
    dimensions?: unknown;
    encoding_format?: unknown;
  };
  if (typeof b.model !== "string") return fail(400, "you must provide a model parameter");
  const raw: unknown[] =
    typeof b.input === "string"
      ? [b.input]
      : Array.isArray(b.input) && b.input.every((x) => typeof x === "number")
        ? [b.input]
        : Array.isArray(b.input)
          ? b.input
          : [];
  if (raw.length === 0) return fail(400, "'input' is required");
  const r = nextReply(mock, recorded);
  if (r.error) return fail(r.error.status, r.error.message, r.error.type);
  const dims = typeof b.dimensions === "number" ? b.dimensions : undefined;
  let tokens = 0;
  const data = raw.map((x, index) => {
    const text = typeof x === "string" ? x : JSON.stringify(x);
    tokens += typeof x === "string" ? mockTokens(x) : (x as unknown[]).length;
    const v = mockEmbedding(text, dims);
    if (b.encoding_format !== "base64") return { object: "embedding", index, embedding: v };
    const buf = Buffer.alloc(v.length * 4);
    v.forEach((f, i) => buf.writeFloatLE(f, i * 4));
    return { object: "embedding", index, embedding: buf.toString("base64") };
  });
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({ object: "list", data, model: b.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }),
  );
}

// ---- The Responses API (POST /v1/responses), as an `openai-responses` upstream speaks it ----
// Reasoning goes out as a reasoning item with a summary and encrypted_content; text as a message item; calls as
// function_call items. Streams are typed events (`event: response.…`) with sequence numbers; a mid-stream
// error is an `error` event after which the connection closes.

function responsesUsage(r: MockReply): Record<string, unknown> {
  const u = defaultUsage(r);
  const output = u.completionTokens + (u.reasoningTokens ?? 0);
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.promptTokens + output,
  };
}

async function respond(
  mock: MockUpstream,
  recorded: ScriptedRequest,
  res: ServerResponse,
  issued: Set<string>,
  fail: (status: number, message: string, type?: string) => void,
): Promise<void> {
  const b = (recorded.body ?? {}) as {
    model?: unknown;
    stream?: unknown;
    store?: unknown;
    previous_response_id?: unknown;
    input?: unknown;
  };
  if (typeof b.model !== "string") return fail(400, "Missing required parameter: 'model'.");
  if (typeof b.previous_response_id === "string" && !issued.has(b.previous_response_id)) {
    return fail(400, `Previous response with id '${b.previous_response_id}' not found.`);
  }
  const r = nextReply(mock, recorded);
  if (r.error) return fail(r.error.status, r.error.message, r.error.type);
  const n = mock.requests.length;
  const id = `resp_mock${n}`;
  if (b.store !== false) issued.add(id);
  const created = Math.floor(Date.now() / 1000);
  const calls = r.toolCalls ?? [];
  const reasoning = r.thinking
    ? {
        type: "reasoning",
        id: `rs_mock${n}`,
        summary: [{ type: "summary_text", text: r.thinking.join("") }],
        encrypted_content: `enc_mock${n}`,
      }
    : null;
  const text = r.text?.join("") ?? "";
  const message = {
    type: "message",
    id: `msg_mock${n}`,
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
  const fc = calls.map((c, i) => ({
    type: "function_call",
    id: `fc_mock${n}_${i}`,
    call_id: callId(i, c.id),
    name: c.name,
    arguments: JSON.stringify(c.arguments),
    status: "completed",
  }));
  const output = [...(reasoning ? [reasoning] : []), ...(text || fc.length === 0 ? [message] : []), ...fc];
  const finish = finishOf(r);
  const response = (status: string, out: unknown[], usage: unknown) => ({
    id,
    object: "response",
    created_at: created,
    status,
    error: null,
    incomplete_details: finish === "length" && status !== "in_progress" ? { reason: "max_output_tokens" } : null,
    instructions: null,
    model: b.model,
    output: out,
    parallel_tool_calls: true,
    previous_response_id: b.previous_response_id ?? null,
    store: b.store !== false,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    usage,
    metadata: {},
  });
  const final = finish === "length" ? "incomplete" : "completed";
  if (b.stream !== true) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(response(final, output, responsesUsage(r))));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  let seq = 0;
  const event = async (type: string, payload: Record<string, unknown>) => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...payload })}\n\n`);
    if (r.delayMs) await sleep(r.delayMs);
  };
  await event("response.created", { response: response("in_progress", [], null) });
  await event("response.in_progress", { response: response("in_progress", [], null) });
  let index = 0;
  if (reasoning) {
    const at = { item_id: reasoning.id, output_index: index, summary_index: 0 };
    await event("response.output_item.added", {
      output_index: index,
      item: { type: "reasoning", id: reasoning.id, summary: [] },
    });
    await event("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } });
    for (const t of r.thinking ?? []) await event("response.reasoning_summary_text.delta", { ...at, delta: t });
    await event("response.reasoning_summary_text.done", { ...at, text: r.thinking!.join("") });
    await event("response.reasoning_summary_part.done", {
      ...at,
      part: { type: "summary_text", text: r.thinking!.join("") },
    });
    await event("response.output_item.done", { output_index: index, item: reasoning });
    index++;
  }
  if (text || fc.length === 0) {
    const at = { item_id: message.id, output_index: index, content_index: 0 };
    await event("response.output_item.added", {
      output_index: index,
      item: { ...message, status: "in_progress", content: [] },
    });
    await event("response.content_part.added", { ...at, part: { type: "output_text", text: "", annotations: [] } });
    for (const [k, t] of (r.text ?? []).entries()) {
      if (r.midStreamError && k === (r.midStreamError.afterChunks ?? 1)) {
        res.end(
          `event: error\ndata: ${JSON.stringify({ type: "error", sequence_number: seq++, code: "server_error", message: r.midStreamError.message, param: null })}\n\n`,
        );
        return;
      }
      if (r.dropAfterChunks !== undefined && k === r.dropAfterChunks) return void res.destroy();
      await event("response.output_text.delta", { ...at, delta: t, logprobs: [] });
    }
    await event("response.output_text.done", { ...at, text, logprobs: [] });
    await event("response.content_part.done", { ...at, part: { type: "output_text", text, annotations: [] } });
    await event("response.output_item.done", { output_index: index, item: message });
    index++;
  }
  for (const item of fc) {
    await event("response.output_item.added", {
      output_index: index,
      item: { ...item, arguments: "", status: "in_progress" },
    });
    for (const f of fragments(item.arguments))
      await event("response.function_call_arguments.delta", { item_id: item.id, output_index: index, delta: f });
    await event("response.function_call_arguments.done", {
      item_id: item.id,
      output_index: index,
      arguments: item.arguments,
    });
    await event("response.output_item.done", { output_index: index, item });
    index++;
  }
  await event(`response.${final}`, { response: response(final, output, responsesUsage(r)) });
  res.end();
}
