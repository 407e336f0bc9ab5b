// Gemini :embedContent and :batchEmbedContents: client body ↔ canonical, canonical ↔ upstream body, as the
// adapter's `embeddings`.

import { z } from "zod";
import {
  type EmbeddingRequest,
  type EmbeddingResult,
  type EmbeddingUpstreamRequest,
  type EmbeddingsAdapter,
  badEmbeddingAnswer,
} from "../embeddings.ts";
import { arr, invalid, num, obj, refuseUntranslatable } from "../shared.ts";
import { parseBody } from "../validate.ts";

export type GeminiEmbedMethod = "embedContent" | "batchEmbedContents";

const content = z.looseObject({
  parts: z.array(z.looseObject({ text: z.string().optional() })).min(1),
  role: z.string().optional(),
});

const one = z.looseObject({
  model: z.string().optional(),
  content,
  taskType: z.string().optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().min(1).optional(),
});

const batch = z.looseObject({ requests: z.array(one).min(1).max(2048) });

type One = z.infer<typeof one>;

function textOf(c: One["content"], param: string): string {
  return c.parts
    .map((p, j) => {
      if (typeof p.text !== "string")
        throw invalid("invalid_value", "Only text parts can be embedded here.", `${param}.parts[${j}]`);
      return p.text;
    })
    .join("\n");
}

/** Parses either method's body; `model` is the URL's. */
export function parseGeminiEmbeddingRequest(body: unknown, method: GeminiEmbedMethod, model: string): EmbeddingRequest {
  const items: { item: One; param: string }[] =
    method === "embedContent"
      ? [{ item: parseBody(one, body), param: "content" }]
      : parseBody(batch, body).requests.map((item, i) => ({ item, param: `requests[${i}].content` }));
  const req: EmbeddingRequest = { model, inputs: items.map(({ item, param }) => textOf(item.content, param)) };
  const dims = new Set(items.map(({ item }) => item.outputDimensionality));
  if (dims.size > 1)
    throw invalid("invalid_value", "Every request of a batch must ask for the same outputDimensionality.", "requests");
  const d = items[0]?.item.outputDimensionality;
  if (d !== undefined) req.dimensions = d;
  // The task type and title shape the vector for its use (retrieval query or document …): no other vendor's
  // model takes them.
  const untranslatable = [
    ...new Set(
      items.flatMap(({ item }) => [
        item.taskType !== undefined ? "taskType" : "",
        item.title !== undefined ? "title" : "",
      ]),
    ),
  ].filter((x) => x !== "");
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  return req;
}

/** A Gemini upstream under another model name: the client's body with the model named in it changed too. */
export function renamedGeminiBody(
  body: Record<string, unknown>,
  method: GeminiEmbedMethod,
  upstreamModel: string,
): Record<string, unknown> {
  const name = `models/${upstreamModel}`;
  if (method === "embedContent") return body.model === undefined ? body : { ...body, model: name };
  return { ...body, requests: arr(body.requests).map((r) => ({ ...obj(r), model: name })) };
}

export function renderGeminiEmbeddings(r: EmbeddingResult, method: GeminiEmbedMethod): Record<string, unknown> {
  if (method === "embedContent") return { embedding: { values: r.vectors[0] ?? [] } };
  return { embeddings: r.vectors.map((values) => ({ values })) };
}

/** Canonical → Gemini upstream: always the batch method, which takes one text as well as many. */
export function buildGeminiEmbeddingRequest(req: EmbeddingRequest, upstreamModel: string): EmbeddingUpstreamRequest {
  const name = `models/${upstreamModel}`;
  const requests = req.inputs.map((text) => {
    const r: Record<string, unknown> = { model: name, content: { parts: [{ text }] } };
    if (req.dimensions !== undefined) r.outputDimensionality = req.dimensions;
    return r;
  });
  return { path: `/models/${encodeURIComponent(upstreamModel)}:batchEmbedContents`, body: { requests } };
}

export function parseGeminiEmbeddingResponse(body: unknown): EmbeddingResult {
  const b = obj(body);
  const list = b.embedding !== undefined ? [b.embedding] : arr(b.embeddings);
  const vectors = list.map((e) => {
    const values = obj(e).values;
    if (!Array.isArray(values)) throw badEmbeddingAnswer();
    return values.map(num);
  });
  // The Gemini API's embedding answers carry no token count: the gateway counts the input itself. Vertex's
  // do (statistics.token_count per prediction, given here as usageMetadata by providers/vertex).
  const counted = obj(b.usageMetadata).promptTokenCount;
  const promptTokens = typeof counted === "number" && Number.isSafeInteger(counted) && counted >= 0 ? counted : null;
  return { vectors, promptTokens };
}

export const geminiEmbeddings: EmbeddingsAdapter = {
  parseClientRequest(body, route) {
    const method: GeminiEmbedMethod = route.method === "embedContent" ? "embedContent" : "batchEmbedContents";
    const request = parseGeminiEmbeddingRequest(body, method, route.model ?? "");
    return {
      request,
      // Gemini names the model in the path: the client's method, toward the route's model.
      passthroughPath: (upstreamModel) => `/models/${encodeURIComponent(upstreamModel)}:${method}`,
      renamedBody: (b, upstreamModel) => renamedGeminiBody(b, method, upstreamModel),
      // Gemini's embedding answers name no model: the upstream's bytes go back as they are.
      relayRenamed: (text) => text,
      render: (result) => renderGeminiEmbeddings(result, method),
    };
  },
  buildUpstreamRequest(req, upstreamModel) {
    refuseUntranslatable(req, "Gemini");
    return buildGeminiEmbeddingRequest(req, upstreamModel);
  },
  parseUpstreamResponse: parseGeminiEmbeddingResponse,
};
