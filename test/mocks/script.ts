// Scripting shared by the mock upstreams (Anthropic, Gemini, and OpenAI when it adopts it): a test says
// what the "model" answers, each mock renders it in its vendor's exact wire format.

import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
} from "node:http";
import type { AddressInfo } from "node:net";

export interface MockToolCall {
  /** Anthropic/OpenAI call id; Gemini sends none. Defaults to a deterministic id. */
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface MockUsage {
  promptTokens: number;
  /** Visible output tokens, reasoning excluded (each vendor adds reasoning its own way). */
  completionTokens: number;
  reasoningTokens?: number;
  /** Prompt tokens read from the prompt cache (part of promptTokens). */
  cachedTokens?: number;
  /** Prompt tokens written to a 5-minute / 1-hour prompt cache (part of promptTokens); only Anthropic reports them. */
  cacheWrite5mTokens?: number;
  cacheWrite1hTokens?: number;
}

/** One scripted answer. Text and thinking are lists of chunks: one chunk per stream event. */
export interface MockReply {
  thinking?: string[];
  /** Anthropic thinking signature / Gemini thoughtSignature; a default is used when thinking is present. */
  signature?: string;
  text?: string[];
  toolCalls?: MockToolCall[];
  /** Defaults to tool_calls when there are calls, else stop. */
  finish?: "stop" | "length" | "tool_calls" | "content_filter";
  usage?: MockUsage;
  /** Answer with this HTTP status and the vendor's error body instead of an answer. */
  error?: { status: number; message: string; type?: string };
  /** Streams only: send the text chunks up to `afterChunks`, then the vendor's mid-stream error event. */
  midStreamError?: { message: string; type?: string; afterChunks?: number };
  /** Streams only: destroy the socket after this many text chunks (a connection cut, no error event). */
  dropAfterChunks?: number;
  /** Pause between stream events, to test time to first token and client disconnects. */
  delayMs?: number;
  /**
   * Streams only (the Anthropic mock): the final usage event waits for this, so a test can look at what the
   * gateway did before the upstream finished (a cut stream's estimate) for as long as it needs.
   */
  holdFinal?: Promise<unknown>;
}

export interface RecordedRequest {
  method: string;
  /** Path and query as received, e.g. /v1/messages or /v1beta/models/x:streamGenerateContent?alt=sse. */
  url: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (undefined when not JSON). */
  body: unknown;
  /** The body's bytes as received (UTF-8), for tests that check what the gateway sent byte for byte. */
  raw?: string;
}

export type MockScript = MockReply | ((req: RecordedRequest) => MockReply);

export interface MockUpstreamOptions {
  /** The upstream credential the mock accepts (default DEFAULT_MOCK_KEY). */
  apiKey?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Answer used when the queue is empty (default DEFAULT_REPLY). */
  fallback?: MockScript;
}

export interface MockUpstream {
  /** Base URL as a route would hold it (Anthropic: …/v1, Gemini: …/v1beta). */
  url: string;
  requests: RecordedRequest[];
  /** Replies for the next requests, consumed in order; then `fallback` answers. */
  queue: MockScript[];
  fallback: MockScript;
  /** Same as pushing onto `queue`. */
  reply(...scripts: MockScript[]): void;
  close(): Promise<void>;
}

export const DEFAULT_MOCK_KEY = "test-upstream-key";
export const DEFAULT_REPLY: MockReply = { text: ["Hello", " from", " the mock."] };

export const defaultUsage = (r: MockReply): MockUsage => r.usage ?? { promptTokens: 10, completionTokens: 5 };

export const finishOf = (r: MockReply): NonNullable<MockReply["finish"]> =>
  r.finish ?? (r.toolCalls && r.toolCalls.length > 0 ? "tool_calls" : "stop");

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Splits a JSON text into n fragments, the way vendors stream tool arguments. */
export function fragments(json: string, n = 3): string[] {
  const size = Math.max(1, Math.ceil(json.length / n));
  const out: string[] = [];
  for (let i = 0; i < json.length; i += size) out.push(json.slice(i, i + size));
  return out.length > 0 ? out : [""];
}

/** The next reply for a request: the head of the queue, else the fallback. */
export function nextReply(mock: Pick<MockUpstream, "queue" | "fallback">, req: RecordedRequest): MockReply {
  const s = mock.queue.shift() ?? mock.fallback;
  return typeof s === "function" ? s(req) : s;
}

/** Starts a node:http server on 127.0.0.1 and returns its origin and a close function. */
export async function listen(server: Server, port: number): Promise<{ origin: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: actual } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${actual}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/**
 * The scaffolding every scripted mock shares: its state, recording each request, listening on a port and
 * the base-URL path. `handle` answers one recorded request; `fail` answers a handler that threw.
 */
export async function startScriptedMock(
  opts: MockUpstreamOptions,
  basePath: string,
  handle: (mock: MockUpstream, recorded: RecordedRequest, req: IncomingMessage, res: ServerResponse) => Promise<void>,
  fail: (res: ServerResponse, err: unknown) => void,
): Promise<MockUpstream> {
  const mock: MockUpstream = {
    url: "",
    requests: [],
    queue: [],
    fallback: opts.fallback ?? DEFAULT_REPLY,
    reply: (...scripts) => void mock.queue.push(...scripts),
    close: async () => undefined,
  };
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readRaw(req);
      const body = parseJson(raw);
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        raw,
      };
      mock.requests.push(recorded);
      await handle(mock, recorded, req, res);
    })().catch((err: unknown) => {
      if (!res.headersSent) fail(res, err);
      else res.destroy();
    });
  });
  const { origin, close } = await listen(server, opts.port ?? 0);
  mock.url = `${origin}${basePath}`;
  mock.close = close;
  return mock;
}

export async function readBody(req: AsyncIterable<Buffer>): Promise<unknown> {
  return parseJson(await readRaw(req));
}

async function readRaw(req: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

/**
 * The mock "model"'s embedding of a text: deterministic, `dimensions` long (8 unless asked), each value a
 * multiple of 1/1024 so it survives float32 (OpenAI's base64 encoding) exactly. Tests compute the expected
 * vectors with it.
 */
export function mockEmbedding(text: string, dimensions = 8): number[] {
  let h = 0;
  for (const ch of text) h = (h * 31 + ch.codePointAt(0)!) % 65_521;
  return Array.from({ length: dimensions }, (_, i) => (((h + 37 * i) % 2048) - 1024) / 1024);
}

/** The mock's token count of an embedding input: one per word. */
export const mockTokens = (text: string): number => text.split(/\s+/).filter(Boolean).length;

/** The chunks of a fetch body as they arrive (the cloud mocks relay their inner mock's stream with it). */
export async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}
