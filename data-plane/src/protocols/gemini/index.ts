// The Gemini protocol: POST /v1beta/models/{model}:generateContent and :streamGenerateContent (also under /v1/),
// embeddings at :embedContent and :batchEmbedContents, keys in `x-goog-api-key` or `?key=`. Streaming without `alt=sse` is one JSON array streamed element by element.

import { geminiModel, geminiModelList } from "../models.ts";
import { errorMessageOf, renameModel, ssePassthrough } from "../passthrough.ts";
import { invalid } from "../shared.ts";
import { geminiEmbeddings } from "./embeddings.ts";
import { decodePathSegment, pattern } from "../routes.ts";
import type { ProtocolAdapter } from "../types.ts";
import { geminiErrorPayload, parseGeminiUpstreamError, renderGeminiError } from "./errors.ts";
import { buildGeminiRequest, geminiModelOf, parseGeminiRequest } from "./request.ts";
import { parseGeminiResponse, renderGeminiResponse } from "./response.ts";
import { createGeminiStreamDecoder, createGeminiStreamEncoder } from "./stream.ts";

const generate = /^\/(?:v1|v1beta)\/models\/([^/:]+):generateContent$/;
const streamGenerate = /^\/(?:v1|v1beta)\/models\/([^/:]+):streamGenerateContent$/;
const embed = /^\/(?:v1|v1beta)\/models\/([^/:]+):embedContent$/;
const batchEmbed = /^\/(?:v1|v1beta)\/models\/([^/:]+):batchEmbedContents$/;
const embedRoute = (method: string) => (m: RegExpExecArray) => ({
  model: decodePathSegment(m[1]!).replace(/^models\//, ""),
  method,
});

const errorFrame = (err: Parameters<typeof renderGeminiError>[0], requestId: string) =>
  `data: ${JSON.stringify(geminiErrorPayload(err.status, err.kind, err.message, requestId))}\r\n\r\n`;

export const gemini: ProtocolAdapter = {
  name: "gemini",
  endpoints: [
    pattern("POST", "/v1beta/models/{model}:generateContent", generate, "generate", (m) => ({
      model: decodePathSegment(m[1]!),
      stream: false,
    })),
    pattern("POST", "/v1beta/models/{model}:streamGenerateContent", streamGenerate, "generate", (m, query) => ({
      model: decodePathSegment(m[1]!),
      stream: true,
      jsonArray: query?.get("alt") !== "sse",
    })),
    pattern("POST", "/v1beta/models/{model}:embedContent", embed, "embed", embedRoute("embedContent")),
    pattern("POST", "/v1beta/models/{model}:batchEmbedContents", batchEmbed, "embed", embedRoute("batchEmbedContents")),
  ],
  keySources: ["x-goog-api-key", "query"],
  speaks: (headers, path, query) =>
    path.startsWith("/v1beta/") || headers["x-goog-api-key"] !== undefined || query?.has("key") === true,
  parseClientRequest: parseGeminiRequest,
  renderClientResponse: renderGeminiResponse,
  createClientStreamEncoder: (ctx) =>
    ctx.jsonArray ? jsonArrayEncoder(createGeminiStreamEncoder(ctx)) : createGeminiStreamEncoder(ctx),
  renderError: renderGeminiError,
  errorFrame,
  streamContentType: (route) => (route?.jsonArray ? "application/json; charset=utf-8" : undefined),
  attributionFields: (body) => ({ endUser: null, tags: body.labels }),
  renderModelList: geminiModelList,
  renderModel: geminiModel,
  basePath: "/v1beta",
  buildUpstreamRequest: buildGeminiRequest,
  authHeaders: (apiKey) => ({ "x-goog-api-key": apiKey }),
  parseUpstreamResponse: parseGeminiResponse,
  createUpstreamStreamDecoder: createGeminiStreamDecoder,
  parseUpstreamError: parseGeminiUpstreamError,
  passthrough: ssePassthrough({
    // The model and streaming are in the URL; the body is the upstream's to judge.
    head: (_body, route) => {
      if (!route?.model)
        throw invalid(
          "missing_required_parameter",
          "The model is part of the URL: /v1beta/models/{model}:generateContent.",
          "model",
        );
      return { model: geminiModelOf(route.model), stream: route.stream === true };
    },
    // Gemini names the model in the path: the client's body goes as it is, whatever the route's model name.
    path: (model, stream) =>
      `/models/${encodeURIComponent(model)}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    // A JSON-array stream (no alt=sse) is re-framed by the translating encoder; SSE and whole answers pass, the
    // client's model name put back in modelVersion when the route renames it.
    accepts: (_req, _upstreamModel, route) => route?.jsonArray !== true,
    renamed: (text, clientModel) => renameModel(text, clientModel, "modelVersion"),
    frame: (ev) => `data: ${ev.data}\r\n\r\n`,
    errorMessage: (ev) =>
      ev.data.startsWith('{"error"') || ev.data.includes('"error":{') ? errorMessageOf(ev.data) : null,
    errorFrame,
    decoder: createGeminiStreamDecoder,
    parseResponse: parseGeminiResponse,
  }),
  providerName: "gcp.gemini",
  embeddings: geminiEmbeddings,
};

/**
 * Gemini without `alt=sse` streams one JSON array, element by element. The encoder writes SSE frames
 * (`data: {...}\r\n\r\n`); this turns each into an array element, and closes the array last.
 */
function jsonArrayEncoder(
  inner: ReturnType<typeof createGeminiStreamEncoder>,
): ReturnType<typeof createGeminiStreamEncoder> {
  let started = false;
  return {
    encode(ev) {
      let out = "";
      for (const block of inner.encode(ev).split("\r\n\r\n")) {
        if (!block.startsWith("data: ")) continue;
        out += (started ? ",\r\n" : "[") + block.slice(6);
        started = true;
      }
      return out;
    },
    close: async () => (started ? "]" : "[]"),
  };
}
