// Embeddings on Vertex: the documented method for every Vertex embedding model (text-embedding-005,
// text-multilingual-embedding-002, gemini-embedding-001) is `:predict`,
//   {"instances":[{"content":"…","task_type":"…","title":"…"}],"parameters":{"outputDimensionality":N}}
//   → {"predictions":[{"embeddings":{"values":[…],"statistics":{"token_count":6,"truncated":false}}}]}
// rather than the Gemini API's :embedContent/:batchEmbedContents. The route speaks Gemini's protocol, so the
// gateway (or the Gemini client) writes one of those; this turns it into a prediction request and the
// predictions back into the Gemini answer the call expects, with Vertex's token count as
// usageMetadata.promptTokenCount (the gateway bills it instead of its own estimate).

import type { UpstreamResponse } from "../../upstreams/transport.ts";
import type { ProtocolCall } from "../types.ts";

const EMBED_PATH = /^\/models\/[^/:]+:(embedContent|batchEmbedContents)(?:\?|$)/;

export const isGeminiEmbedPath = (path: string): boolean => EMBED_PATH.test(path);
const isBatch = (path: string): boolean => EMBED_PATH.exec(path)?.[1] === "batchEmbedContents";

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});

/** One Gemini embed request (of a batch, or the single method's body) → a prediction instance. */
function instanceOf(r: Json): { instance: Json; dimensions: unknown } {
  const parts = Array.isArray(obj(r.content).parts) ? (obj(r.content).parts as unknown[]) : [];
  const instance: Json = {
    content: parts.map((p) => (typeof obj(p).text === "string" ? (obj(p).text as string) : "")).join("\n"),
  };
  if (typeof r.taskType === "string") instance.task_type = r.taskType;
  if (typeof r.title === "string") instance.title = r.title;
  return { instance, dimensions: r.outputDimensionality };
}

export function predictBody(call: ProtocolCall): string {
  const text = typeof call.body === "string" ? call.body : call.body.toString("utf8");
  const body = obj(JSON.parse(text));
  const requests = isBatch(call.path) ? (Array.isArray(body.requests) ? body.requests.map(obj) : []) : [body];
  const each = requests.map(instanceOf);
  const out: Json = { instances: each.map((e) => e.instance) };
  // The gateway's own parser holds a batch to one outputDimensionality (protocols/gemini/embeddings.ts).
  const dims = each.find((e) => typeof e.dimensions === "number")?.dimensions;
  if (dims !== undefined) out.parameters = { outputDimensionality: dims };
  return JSON.stringify(out);
}

/** Vertex's predictions → the Gemini answer of the method called; an answer it cannot read goes as it came. */
export function geminiAnswerOf(text: string, batch: boolean): string {
  let parsed: Json;
  try {
    parsed = obj(JSON.parse(text));
  } catch {
    return text;
  }
  if (!Array.isArray(parsed.predictions)) return text;
  let tokens = 0;
  let counted = true;
  const vectors = parsed.predictions.map((p) => {
    const e = obj(obj(p).embeddings);
    const n = obj(e.statistics).token_count;
    if (typeof n === "number" && Number.isSafeInteger(n) && n >= 0) tokens += n;
    else counted = false;
    return { values: e.values };
  });
  const out: Json = batch ? { embeddings: vectors } : { embedding: vectors[0] ?? { values: [] } };
  if (counted && vectors.length > 0) out.usageMetadata = { promptTokenCount: tokens };
  return JSON.stringify(out);
}

/** The 2xx answer of a :predict call, re-framed as the Gemini method's answer. */
export function predictAnswer(call: ProtocolCall, res: UpstreamResponse): UpstreamResponse {
  const batch = isBatch(call.path);
  let converted: Promise<string> | null = null;
  const text = () => (converted ??= res.text().then((t) => geminiAnswerOf(t, batch)));
  return {
    status: res.status,
    headers: { ...res.headers, "content-length": undefined },
    text,
    body: {
      async *[Symbol.asyncIterator]() {
        yield Buffer.from(await text());
      },
    },
  };
}
