// The OpenAI Responses API: POST /v1/responses (and GET / DELETE /v1/responses/{id} for stored responses),
// keys as `Authorization: Bearer`. As an upstream protocol it is `openai-responses` in the config.

import { openaiModel, openaiModelList } from "../models.ts";
import { parseOpenAIUpstreamError, renderOpenAIError } from "../openai/errors.ts";
import { decodePathSegment, exact, pattern } from "../routes.ts";
import type { ProtocolAdapter } from "../types.ts";
import { responsesErrorFrame } from "./errors.ts";
import { responsesPassthrough } from "./passthrough.ts";
import { buildResponsesRequest, parseResponsesRequest } from "./request.ts";
import { parseResponsesResponse, renderResponsesResponse } from "./response.ts";
import { openResponsesSession, renderStoredResponse } from "./state.ts";
import { createResponsesStreamDecoder, createResponsesStreamEncoder } from "./stream.ts";

const one = /^\/v1\/responses\/([^/]+)$/;
const inputItems = /^\/v1\/responses\/([^/]+)\/input_items$/;

export const responses: ProtocolAdapter = {
  name: "openai-responses",
  endpoints: [
    exact("POST", "/v1/responses", "generate"),
    pattern("GET", "/v1/responses/{id}", one, "retrieve", (m) => ({ id: decodePathSegment(m[1]!) })),
    pattern("DELETE", "/v1/responses/{id}", one, "delete", (m) => ({ id: decodePathSegment(m[1]!) })),
    pattern("GET", "/v1/responses/{id}/input_items", inputItems, "list_input", (m) => ({
      id: decodePathSegment(m[1]!),
    })),
  ],
  keySources: [],
  parseClientRequest: (body) => parseResponsesRequest(body),
  renderClientResponse: renderResponsesResponse,
  createClientStreamEncoder: createResponsesStreamEncoder,
  renderError: renderOpenAIError,
  errorFrame: responsesErrorFrame,
  attributionFields: (body) => ({ endUser: body.user, tags: body.metadata }),
  renderModelList: openaiModelList,
  renderModel: openaiModel,
  openSession: openResponsesSession,
  renderStored: renderStoredResponse,
  basePath: "/v1",
  buildUpstreamRequest: buildResponsesRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  parseUpstreamResponse: parseResponsesResponse,
  createUpstreamStreamDecoder: createResponsesStreamDecoder,
  parseUpstreamError: parseOpenAIUpstreamError,
  passthrough: responsesPassthrough,
  providerName: "openai",
};
