import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

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
    if (req.headers.authorization !== `Bearer ${apiKey}`) return fail(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key");
    if (req.url !== "/v1/chat/completions" || req.method !== "POST") return fail(404, `Unknown path ${req.url}`);
    const s = { ...mock.fallback, ...(mock.queue.shift() ?? {}) };
    if (s.delayMs) await new Promise((r) => setTimeout(r, s.delayMs));
    if (s.status && s.status !== 200) return fail(s.status, s.errorMessage ?? "upstream failure", s.status === 429 ? "rate_limit_error" : "server_error");
    const content = s.content ?? "";
    const model = String(body.model);
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
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: s.finishReason ?? "stop" }],
          ...(s.omitUsage ? {} : { usage }),
          system_fingerprint: "fp_mock",
        }),
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
        res.socket?.destroy();
        return;
      }
      if (s.chunkDelayMs) await new Promise((r) => setTimeout(r, s.chunkDelayMs));
      res.write(frame({ content: parts[i] }, null));
    }
    res.write(frame({}, s.finishReason ?? "stop"));
    if (includeUsage && !s.omitUsage) {
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_mock", choices: [], usage })}\n\n`);
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
