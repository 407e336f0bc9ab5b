import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

// The bench's upstream: a lean OpenAI Chat Completions mock on node:http, run in its own process so it never
// shares an event loop with a proxy or the load generator. Answers are pre-rendered; the only per-request
// work is reading and parsing the (small) body.
//
//   PORT                     listen port (0: any; the port is printed as JSON on stdout)
//   MOCK_API_KEY             the upstream key every caller must present as `Authorization: Bearer …`
//   MOCK_LATENCY_MS          delay before the response head (default 0)
//   MOCK_STREAM_CHUNKS       content chunks per stream (default 100)
//   MOCK_CHUNK_INTERVAL_MS   delay between stream chunks; 0 writes each chunk on its own turn of the loop
//   MOCK_SLOW_INTERVAL_MS    for models whose name contains "slow": one chunk per interval (default 1000)
//   MOCK_SLOW_CHUNKS         … and this many of them (default 120), so the stream stays open
//
// GET /stats answers {"requests","openStreams","peakOpenStreams"}.

const env = process.env;
const apiKey = `Bearer ${env.MOCK_API_KEY ?? "sk-bench-upstream"}`;
const latencyMs = Number(env.MOCK_LATENCY_MS ?? 0);
const streamChunks = Number(env.MOCK_STREAM_CHUNKS ?? 100);
const chunkIntervalMs = Number(env.MOCK_CHUNK_INTERVAL_MS ?? 0);
const slowIntervalMs = Number(env.MOCK_SLOW_INTERVAL_MS ?? 1000);
const slowChunks = Number(env.MOCK_SLOW_CHUNKS ?? 120);

const created = 1_700_000_000;
const completion = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created,
    model: "bench-upstream-model",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "Hello! How can I help you today?", refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
    usage: {
      prompt_tokens: 9,
      completion_tokens: 9,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
    system_fingerprint: "fp_bench",
  }),
);
const frame = (o: unknown) => Buffer.from(`data: ${JSON.stringify(o)}\n\n`);
const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  frame({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created,
    model: "bench-upstream-model",
    system_fingerprint: "fp_bench",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
const firstChunk = chunk({ role: "assistant", content: "" }, null);
const tokenChunk = chunk({ content: "tok " }, null);
const lastChunk = chunk({}, "stop");
const usageChunk = (n: number) =>
  frame({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created,
    model: "bench-upstream-model",
    choices: [],
    usage: { prompt_tokens: 9, completion_tokens: n, total_tokens: 9 + n },
  });
const usageFast = usageChunk(streamChunks);
const usageSlow = usageChunk(slowChunks);
const done = Buffer.from("data: [DONE]\n\n");
const jsonHead = {
  "content-type": "application/json",
  "content-length": String(completion.length),
  "openai-processing-ms": "1",
};
const sseHead = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

let requests = 0;
let openStreams = 0;
let peakOpenStreams = 0;

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null } }));
}

function stream(res: ServerResponse, chunks: number, intervalMs: number, includeUsage: boolean, usage: Buffer): void {
  res.writeHead(200, sseHead);
  res.write(firstChunk);
  openStreams++;
  if (openStreams > peakOpenStreams) peakOpenStreams = openStreams;
  let sent = 0;
  let closed = false;
  res.on("close", () => {
    if (!closed) openStreams--;
    closed = true;
  });
  const next = () => {
    if (closed) return;
    if (sent < chunks) {
      sent++;
      res.write(tokenChunk);
      if (intervalMs > 0) setTimeout(next, intervalMs);
      else setImmediate(next);
      return;
    }
    res.write(lastChunk);
    if (includeUsage) res.write(usage);
    res.end(done);
  };
  if (intervalMs > 0) setTimeout(next, intervalMs);
  else setImmediate(next);
}

function answer(req: IncomingMessage, res: ServerResponse, raw: string): void {
  let body: { model?: unknown; stream?: unknown; stream_options?: { include_usage?: unknown } | null };
  try {
    body = JSON.parse(raw);
  } catch {
    return fail(res, 400, "We could not parse the JSON body of your request.");
  }
  if (body.stream === true) {
    const slow = typeof body.model === "string" && body.model.includes("slow");
    const includeUsage = body.stream_options?.include_usage === true;
    if (slow) stream(res, slowChunks, slowIntervalMs, includeUsage, usageSlow);
    else stream(res, streamChunks, chunkIntervalMs, includeUsage, usageFast);
    return;
  }
  res.writeHead(200, jsonHead);
  res.end(completion);
}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ requests, openStreams, peakOpenStreams }));
    return;
  }
  requests++;
  if (req.headers.authorization !== apiKey) {
    req.resume();
    return fail(res, 401, "Incorrect API key provided.");
  }
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    req.resume();
    return fail(res, 404, `Unknown path ${req.url}`);
  }
  let raw = "";
  req.setEncoding("utf8");
  req.on("data", (d: string) => (raw += d));
  req.on("end", () => {
    if (latencyMs > 0) setTimeout(() => answer(req, res, raw), latencyMs);
    else answer(req, res, raw);
  });
});
server.keepAliveTimeout = 65_000;
server.maxRequestsPerSocket = 0;
server.listen(Number(env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ listening: port })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
