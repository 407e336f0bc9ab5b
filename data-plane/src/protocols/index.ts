// The protocol registry: each protocol's translators behind one interface, looked up by name.
// A request flows client adapter → canonical → upstream adapter, and the answer the other way:
//
//   const req = protocols[client].parseClientRequest(body, route);
//   const up = protocols[upstream].buildUpstreamRequest(req, upstreamModel, { stream: req.stream });
//   …send with protocols[upstream].authHeaders(key)…
//   protocols[client].renderClientResponse(protocols[upstream].parseUpstreamResponse(json), ctx)
//   or, streaming: upstream decoder.push(bytes) → events → client encoder.encode(event) → bytes.

import type { ProtocolName } from "./canonical.ts";
import { buildAnthropicRequest, parseAnthropicRequest } from "./anthropic/request.ts";
import { parseAnthropicResponse, renderAnthropicResponse } from "./anthropic/response.ts";
import { createAnthropicStreamDecoder, createAnthropicStreamEncoder } from "./anthropic/stream.ts";
import { parseAnthropicUpstreamError, renderAnthropicError } from "./anthropic/errors.ts";
import { buildGeminiRequest, parseGeminiRequest } from "./gemini/request.ts";
import { parseGeminiResponse, renderGeminiResponse } from "./gemini/response.ts";
import { createGeminiStreamDecoder, createGeminiStreamEncoder } from "./gemini/stream.ts";
import { parseGeminiUpstreamError, renderGeminiError } from "./gemini/errors.ts";
import { buildOpenAIRequest, parseOpenAIRequest } from "./openai/request.ts";
import { parseOpenAIResponse, renderOpenAIResponse } from "./openai/response.ts";
import { createOpenAIStreamDecoder, createOpenAIStreamEncoder } from "./openai/stream.ts";
import { parseOpenAIUpstreamError, renderOpenAIError } from "./openai/errors.ts";
import type { ProtocolAdapter } from "./types.ts";

export type * from "./canonical.ts";
export type * from "./types.ts";
export { DEFAULT_ANTHROPIC_MAX_TOKENS, REASONING_BUDGET } from "./shared.ts";

/** The Anthropic API version modelgate speaks to upstreams (the one whose wire format it implements). */
export const ANTHROPIC_VERSION = "2023-06-01";

export const openai: ProtocolAdapter = {
  name: "openai",
  parseClientRequest: (body) => parseOpenAIRequest(body),
  renderClientResponse: renderOpenAIResponse,
  createClientStreamEncoder: createOpenAIStreamEncoder,
  renderError: renderOpenAIError,
  buildUpstreamRequest: buildOpenAIRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  parseUpstreamResponse: parseOpenAIResponse,
  createUpstreamStreamDecoder: createOpenAIStreamDecoder,
  parseUpstreamError: parseOpenAIUpstreamError,
};

export const anthropic: ProtocolAdapter = {
  name: "anthropic",
  parseClientRequest: (body) => parseAnthropicRequest(body),
  renderClientResponse: renderAnthropicResponse,
  createClientStreamEncoder: createAnthropicStreamEncoder,
  renderError: renderAnthropicError,
  buildUpstreamRequest: buildAnthropicRequest,
  authHeaders: (apiKey) => ({ "x-api-key": apiKey, "anthropic-version": ANTHROPIC_VERSION }),
  parseUpstreamResponse: parseAnthropicResponse,
  createUpstreamStreamDecoder: createAnthropicStreamDecoder,
  parseUpstreamError: parseAnthropicUpstreamError,
};

export const gemini: ProtocolAdapter = {
  name: "gemini",
  parseClientRequest: parseGeminiRequest,
  renderClientResponse: renderGeminiResponse,
  createClientStreamEncoder: createGeminiStreamEncoder,
  renderError: renderGeminiError,
  buildUpstreamRequest: buildGeminiRequest,
  authHeaders: (apiKey) => ({ "x-goog-api-key": apiKey }),
  parseUpstreamResponse: parseGeminiResponse,
  createUpstreamStreamDecoder: createGeminiStreamDecoder,
  parseUpstreamError: parseGeminiUpstreamError,
};

export const protocols: Readonly<Record<ProtocolName, ProtocolAdapter>> = { openai, anthropic, gemini };

