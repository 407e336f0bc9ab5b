// The Anthropic Messages protocol: POST /v1/messages (and count_tokens), keys in `x-api-key` or Bearer.

import { anthropicModel, anthropicModelList } from "../models.ts";
import { errorMessageOf, readHead, renameModel, ssePassthrough } from "../passthrough.ts";
import { exact } from "../routes.ts";
import { encodeSse } from "../sse.ts";
import type { ProtocolAdapter } from "../types.ts";
import { parseAnthropicUpstreamError, renderAnthropicError } from "./errors.ts";
import { buildAnthropicRequest, parseAnthropicRequest } from "./request.ts";
import { parseAnthropicResponse, renderAnthropicResponse } from "./response.ts";
import { createAnthropicStreamDecoder, createAnthropicStreamEncoder } from "./stream.ts";

/** The Anthropic API version modelgate speaks to upstreams (the one whose wire format it implements). */
export const ANTHROPIC_VERSION = "2023-06-01";

const errorFrame = (err: Parameters<typeof renderAnthropicError>[0], requestId: string) =>
  encodeSse(renderAnthropicError(err, requestId).body, "error");

export const anthropic: ProtocolAdapter = {
  name: "anthropic",
  endpoints: [exact("POST", "/v1/messages", "generate"), exact("POST", "/v1/messages/count_tokens", "count_tokens")],
  keySources: ["x-api-key"],
  speaks: (headers, path) =>
    path.startsWith("/v1/messages") || headers["anthropic-version"] !== undefined || headers["x-api-key"] !== undefined,
  parseClientRequest: (body) => parseAnthropicRequest(body),
  renderClientResponse: renderAnthropicResponse,
  createClientStreamEncoder: createAnthropicStreamEncoder,
  renderError: renderAnthropicError,
  errorFrame,
  attributionFields: (body) => ({
    endUser: (body.metadata as { user_id?: unknown } | null | undefined)?.user_id ?? null,
    tags: undefined,
  }),
  renderModelList: anthropicModelList,
  renderModel: anthropicModel,
  basePath: "/v1",
  buildUpstreamRequest: buildAnthropicRequest,
  authHeaders: (apiKey) => ({ "x-api-key": apiKey, "anthropic-version": ANTHROPIC_VERSION }),
  parseUpstreamResponse: parseAnthropicResponse,
  createUpstreamStreamDecoder: createAnthropicStreamDecoder,
  parseUpstreamError: parseAnthropicUpstreamError,
  // The upstream's bytes go out unchanged when the model name needs no rewriting; otherwise it is translated.
  passthrough: ssePassthrough({
    head: readHead,
    // anthropic-beta (Claude Code's betas) and anthropic-version: the client's body is in that version's terms.
    forwardsHeader: (name) => name.startsWith("anthropic-"),
    path: () => "/messages",
    // Another model name: the client's body with only the name changed, and the client's name put back in the
    // answer (the message, or a stream's message_start).
    body: (raw, body, req, upstreamModel) =>
      upstreamModel === req.model ? raw : JSON.stringify({ ...body, model: upstreamModel }),
    renamed: (text, clientModel) => renameModel(text, clientModel, "model", "message"),
    frame: (ev) => `event: ${ev.event ?? "message"}\ndata: ${ev.data}\n\n`,
    errorMessage: (ev) => (ev.event === "error" ? errorMessageOf(ev.data) : null),
    errorFrame,
    decoder: createAnthropicStreamDecoder,
    parseResponse: parseAnthropicResponse,
  }),
  providerName: "anthropic",
};
