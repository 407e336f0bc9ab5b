// The OpenAI Chat Completions protocol: POST /v1/chat/completions (and POST /v1/embeddings), keys as
// `Authorization: Bearer`.

import { encodeSse } from "../sse.ts";
import { openaiModel, openaiModelList } from "../models.ts";
import { exact } from "../routes.ts";
import { openaiEmbeddings } from "./embeddings.ts";
import type { ProtocolAdapter } from "../types.ts";
import { parseOpenAIUpstreamError, renderOpenAIError } from "./errors.ts";
import { openAIPassthrough } from "./passthrough.ts";
import { buildOpenAIRequest, parseOpenAIRequest } from "./request.ts";
import { parseOpenAIResponse, renderOpenAIResponse } from "./response.ts";
import { createOpenAIStreamDecoder, createOpenAIStreamEncoder } from "./stream.ts";

export const openai: ProtocolAdapter = {
  name: "openai",
  endpoints: [exact("POST", "/v1/chat/completions", "generate"), exact("POST", "/v1/embeddings", "embed")],
  keySources: [],
  parseClientRequest: (body) => parseOpenAIRequest(body),
  renderClientResponse: renderOpenAIResponse,
  createClientStreamEncoder: createOpenAIStreamEncoder,
  renderError: renderOpenAIError,
  errorFrame: (err, requestId) => encodeSse(renderOpenAIError(err, requestId).body),
  attributionFields: (body) => ({ endUser: body.user, tags: body.metadata }),
  renderModelList: openaiModelList,
  renderModel: openaiModel,
  basePath: "/v1",
  buildUpstreamRequest: buildOpenAIRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  parseUpstreamResponse: parseOpenAIResponse,
  createUpstreamStreamDecoder: createOpenAIStreamDecoder,
  parseUpstreamError: parseOpenAIUpstreamError,
  passthrough: openAIPassthrough,
  providerName: "openai",
  embeddings: openaiEmbeddings,
};
