// A mock Gemini upstream speaking the real wire format: generateContent JSON; streamGenerateContent with
// alt=sse as `data: {GenerateContentResponse}\r\n\r\n` events (cumulative usageMetadata on every chunk, the
// finish reason on the last, no [DONE]); and without alt=sse as one JSON array written element by element.
// Frames are written by hand here, not with the gateway's encoders, so the two cannot share a bug.

import type { ServerResponse } from "node:http";
import {
  DEFAULT_MOCK_KEY,
  type MockReply,
  type MockUpstream,
  type MockUpstreamOptions,
  type RecordedRequest,
  defaultUsage,
  finishOf,
  mockEmbedding,
  nextReply,
  sleep,
  startScriptedMock,
} from "./script.ts";

const FINISH = { stop: "STOP", length: "MAX_TOKENS", tool_calls: "STOP", content_filter: "SAFETY" } as const;

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

const errorBody = (code: number, message: string, status?: string): string =>
  JSON.stringify({ error: { code, message, status: status ?? STATUS[code] ?? "UNKNOWN" } }, null, 2);

function sendError(res: ServerResponse, code: number, message: string, status?: string): void {
  res.writeHead(code, { "content-type": "application/json; charset=UTF-8" });
  res.end(errorBody(code, message, status));
}

type Part = Record<string, unknown>;

/** Cumulative usage after `visible` of the answer's visible tokens. */
function usageMetadata(r: MockReply, visible: number): Record<string, unknown> {
  const u = defaultUsage(r);
  const thoughts = u.reasoningTokens ?? 0;
  const out: Record<string, unknown> = { promptTokenCount: u.promptTokens };
  if (visible > 0) out.candidatesTokenCount = visible;
  out.totalTokenCount = u.promptTokens + visible + thoughts;
  if (u.cachedTokens) out.cachedContentTokenCount = u.cachedTokens;
  out.promptTokensDetails = [{ modality: "TEXT", tokenCount: u.promptTokens }];
  if (thoughts) out.thoughtsTokenCount = thoughts;
  return out;
}

function chunk(
  parts: Part[] | null,
  r: MockReply,
  visible: number,
  model: string,
  finish?: string,
): Record<string, unknown> {
  const cand: Record<string, unknown> = {};
  if (parts) cand.content = { parts, role: "model" };
  if (finish) cand.finishReason = finish;
  cand.index = 0;
  return {
    candidates: [cand],
    usageMetadata: usageMetadata(r, visible),
    modelVersion: model,
    responseId: "mockResponseId01",
  };
}

const callParts = (r: MockReply): Part[] =>
  (r.toolCalls ?? []).map((c, i) => {
    const p: Part = { functionCall: { name: c.name, args: c.arguments } };
    // Gemini puts the thought signature on the first function call of a turn.
    if (i === 0 && r.thinking) p.thoughtSignature = r.signature ?? "bW9jay1zaWduYXR1cmU=";
    return p;
  });

function wholeAnswer(r: MockReply, model: string): Record<string, unknown> {
  const parts: Part[] = [];
  if (r.thinking) parts.push({ text: r.thinking.join(""), thought: true });
  if (r.text) parts.push({ text: r.text.join("") });
  parts.push(...callParts(r));
  return chunk(parts, r, defaultUsage(r).completionTokens, model, FINISH[finishOf(r)]);
}

/** The chunks of a streamed answer, in order; the last carries the finish reason and the final usage. */
function streamChunks(r: MockReply, model: string): (Record<string, unknown> | { error: true; afterText: number })[] {
  const out: (Record<string, unknown> | { error: true; afterText: number })[] = [];
  const total = defaultUsage(r).completionTokens;
  const texts = r.text ?? [];
  for (const t of r.thinking ?? []) out.push(chunk([{ text: t, thought: true }], r, 0, model));
  texts.forEach((t, n) => {
    if (r.midStreamError && n === (r.midStreamError.afterChunks ?? 1)) out.push({ error: true, afterText: n });
    const visible = Math.max(1, Math.round(((n + 1) / texts.length) * total));
    out.push(chunk([{ text: t }], r, visible, model));
  });
  if (r.midStreamError && texts.length <= (r.midStreamError.afterChunks ?? 1))
    out.push({ error: true, afterText: texts.length });
  const calls = callParts(r);
  // Google sends function calls whole, and often the finish reason in the same chunk.
  out.push(chunk(calls.length > 0 ? calls : [{ text: "" }], r, total, model, FINISH[finishOf(r)]));
  return out;
}

async function stream(res: ServerResponse, r: MockReply, model: string, sse: boolean): Promise<void> {
  res.writeHead(200, { "content-type": sse ? "text/event-stream" : "application/json; charset=UTF-8" });
  const chunks = streamChunks(r, model);
  let textSent = 0;
  for (const [i, c] of chunks.entries()) {
    if ("error" in c) {
      const code = r.midStreamError?.type === "RESOURCE_EXHAUSTED" ? 429 : 503;
      const body = JSON.stringify(
        JSON.parse(errorBody(code, r.midStreamError?.message ?? "error", r.midStreamError?.type)),
      );
      res.end(sse ? `data: ${body}\r\n\r\n` : `${i === 0 ? "[" : ",\r\n"}${body}]`);
      return;
    }
    if (r.dropAfterChunks !== undefined && textSent === r.dropAfterChunks && (r.text?.length ?? 0) > textSent) {
      res.destroy();
      return;
    }
    if (i > 0 && r.delayMs) await sleep(r.delayMs);
    if (sse) res.write(`data: ${JSON.stringify(c)}\r\n\r\n`);
    else res.write(`${i === 0 ? "[" : "\n,\r\n"}${JSON.stringify(c, null, 2)}`);
    const parts =
      ((c.candidates as Record<string, unknown>[])[0]?.content as { parts?: Part[] } | undefined)?.parts ?? [];
    if (parts.some((p) => typeof p.text === "string" && p.text !== "" && p.thought !== true)) textSent++;
  }
  res.end(sse ? "" : "\n]");
}

const ROUTE = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const EMBED = /^\/v1beta\/models\/([^/:]+):(embedContent|batchEmbedContents)$/;

interface EmbedRequest {
  model?: unknown;
  content?: { parts?: { text?: unknown }[] };
  outputDimensionality?: unknown;
}

/**
 * :embedContent and :batchEmbedContents as Google answers them: `{embedding:{values}}` or
 * `{embeddings:[{values}]}`, no token counts. Like Google, a batch request must name the URL's model.
 */
function embed(
  mock: MockUpstream,
  recorded: RecordedRequest,
  res: ServerResponse,
  model: string,
  isBatch: boolean,
): void {
  const body = (recorded.body ?? {}) as { requests?: EmbedRequest[] } & EmbedRequest;
  const requests = isBatch ? (body.requests ?? []) : [body];
  if (requests.length === 0)
    return sendError(res, 400, "* BatchEmbedContentsRequest.requests: requests is not specified");
  for (const [i, r] of requests.entries()) {
    if (isBatch && r.model !== `models/${model}`) {
      return sendError(
        res,
        400,
        `* BatchEmbedContentsRequest.requests[${i}].model: model in the request does not match the model in the URL`,
      );
    }
    if (!Array.isArray(r.content?.parts))
      return sendError(res, 400, `* EmbedContentRequest.content: content is not specified`);
  }
  const reply = nextReply(mock, recorded);
  if (reply.error) return sendError(res, reply.error.status, reply.error.message, reply.error.type);
  const vectors = requests.map((r) => {
    const text = (r.content?.parts ?? []).map((p) => String(p.text ?? "")).join("\n");
    return {
      values: mockEmbedding(text, typeof r.outputDimensionality === "number" ? r.outputDimensionality : undefined),
    };
  });
  res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
  res.end(JSON.stringify(isBatch ? { embeddings: vectors } : { embedding: vectors[0] }, null, 2));
}

/** Starts the mock. Its `url` ends in /v1beta, as a Gemini route's base URL does. */
export async function startGeminiUpstream(opts: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const apiKey = opts.apiKey ?? DEFAULT_MOCK_KEY;
  return startScriptedMock(
    opts,
    "/v1beta",
    async (mock, recorded, req, res): Promise<void> => {
      const url = new URL(req.url ?? "/", "http://mock");
      const key = req.headers["x-goog-api-key"] ?? url.searchParams.get("key");
      if (key !== apiKey) {
        // The gateway's contract is a 401 for a bad key; Google itself would answer 400 API_KEY_INVALID.
        return sendError(
          res,
          401,
          "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        );
      }
      const e = EMBED.exec(url.pathname);
      if (req.method === "POST" && e)
        return embed(mock, recorded, res, decodeURIComponent(e[1] ?? ""), e[2] === "batchEmbedContents");
      const m = ROUTE.exec(url.pathname);
      if (req.method !== "POST" || !m) return sendError(res, 404, `Method not found: ${url.pathname}`);
      const model = decodeURIComponent(m[1] ?? "");
      if (recorded.body === undefined || !Array.isArray((recorded.body as { contents?: unknown }).contents)) {
        return sendError(res, 400, "* GenerateContentRequest.contents: contents is not specified");
      }
      const r = nextReply(mock, recorded);
      if (r.error) return sendError(res, r.error.status, r.error.message, r.error.type);
      if (m[2] === "streamGenerateContent") return stream(res, r, model, url.searchParams.get("alt") === "sse");
      res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
      res.end(JSON.stringify(wholeAnswer(r, model), null, 2));
    },
    (res, err) => sendError(res, 500, String(err)),
  );
}
