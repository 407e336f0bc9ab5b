// OpenAI /v1/embeddings: client body ↔ canonical, canonical ↔ upstream body, as the adapter's `embeddings`.

import { z } from "zod";
import {
  type EmbeddingRequest,
  type EmbeddingResult,
  type EmbeddingUpstreamRequest,
  type EmbeddingsAdapter,
  badEmbeddingAnswer,
} from "../embeddings.ts";
import { arr, num, obj, refuseUntranslatable } from "../shared.ts";
import { parseBody } from "../validate.ts";
import { fromBase64Floats, toBase64Floats } from "./vectors.ts";

const tokens = z.array(z.number().int().nonnegative());

const schema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(2048),
    tokens.min(1),
    z.array(tokens.min(1)).min(1).max(2048),
  ]),
  dimensions: z.number().int().min(1).optional(),
  encoding_format: z.enum(["float", "base64"]).optional(),
  user: z.string().optional(),
});

export interface OpenAIEmbeddingClient {
  request: EmbeddingRequest;
  /** the client wants each vector as base64 of little-endian float32 (the openai SDK's default) */
  base64: boolean;
}

export function parseOpenAIEmbeddingRequest(body: unknown): OpenAIEmbeddingClient {
  const b = parseBody(schema, body);
  const req: EmbeddingRequest = { model: b.model, inputs: [] };
  if (typeof b.input === "string") req.inputs = [b.input];
  else if (b.input.every((x) => typeof x === "string")) req.inputs = b.input as string[];
  // Token ids are a tokenizer's: only an OpenAI upstream (with the same tokenizer) can read them.
  else req.untranslatable = ["input"];
  if (b.dimensions !== undefined) req.dimensions = b.dimensions;
  return { request: req, base64: b.encoding_format === "base64" };
}

/** The client body for an OpenAI upstream under another model name: every field kept, the name changed. */
export const renamedOpenAIBody = (body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> => ({
  ...body,
  model: upstreamModel,
});

export function renderOpenAIEmbeddings(
  r: EmbeddingResult,
  model: string,
  base64: boolean,
  promptTokens: number,
): Record<string, unknown> {
  return {
    object: "list",
    data: r.vectors.map((v, index) => ({ object: "embedding", index, embedding: base64 ? toBase64Floats(v) : v })),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

export function buildOpenAIEmbeddingRequest(req: EmbeddingRequest, upstreamModel: string): EmbeddingUpstreamRequest {
  const body: Record<string, unknown> = { model: upstreamModel, input: req.inputs, encoding_format: "float" };
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  return { path: "/embeddings", body };
}

export function parseOpenAIEmbeddingResponse(body: unknown): EmbeddingResult {
  const b = obj(body);
  const items = arr(b.data)
    .map(obj)
    .sort((x, y) => num(x.index) - num(y.index));
  const vectors = items.map((d) => {
    const e = d.embedding;
    if (typeof e === "string") return fromBase64Floats(e);
    if (Array.isArray(e)) return e.map(num);
    throw badEmbeddingAnswer();
  });
  const usage = obj(b.usage);
  return { vectors, promptTokens: typeof usage.prompt_tokens === "number" ? num(usage.prompt_tokens) : null };
}

export const openaiEmbeddings: EmbeddingsAdapter = {
  parseClientRequest(body) {
    const { request, base64 } = parseOpenAIEmbeddingRequest(body);
    return {
      request,
      passthroughPath: () => "/embeddings",
      renamedBody: renamedOpenAIBody,
      // The upstream's answer names its own model: the client's name goes back in, everything else kept.
      relayRenamed: (_text, parsed) => JSON.stringify({ ...parsed, model: request.model }),
      render: (result, promptTokens) => renderOpenAIEmbeddings(result, request.model, base64, promptTokens),
    };
  },
  buildUpstreamRequest(req, upstreamModel) {
    refuseUntranslatable(req, "OpenAI");
    return buildOpenAIEmbeddingRequest(req, upstreamModel);
  },
  parseUpstreamResponse: parseOpenAIEmbeddingResponse,
};
