// Gemini's error shape, both ways: {"error":{"code","message","status"}}.

import { type ErrorRenderer, type GatewayError, type GatewayErrorKind, withRequestId } from "../../errors.ts";
import type { UpstreamErrorInfo } from "../canonical.ts";
import { kindOfStatus, num, obj, parseJsonLoose, str } from "../shared.ts";

const statusOfKind: Record<GatewayErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  payment_required: "FAILED_PRECONDITION",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  too_large: "INVALID_ARGUMENT",
  rate_limit: "RESOURCE_EXHAUSTED",
  upstream: "INTERNAL",
  timeout: "DEADLINE_EXCEEDED",
  unavailable: "UNAVAILABLE",
  internal: "INTERNAL",
};

/** The error object alone, as it also appears as a mid-stream `data:` event. */
export const geminiErrorPayload = (
  status: number,
  kind: GatewayErrorKind,
  message: string,
  requestId: string,
): Record<string, unknown> => ({
  error: { code: status, message: withRequestId(message, requestId), status: statusOfKind[kind] },
});

/**
 * Upstream builders refuse a parameter by its canonical (OpenAI) name; a Gemini client knows it by another.
 * Gemini's own validation errors already name camelCase paths, which never collide with these names.
 */
const GEMINI_PARAM: Record<string, string> = {
  n: "generationConfig.candidateCount",
  top_k: "generationConfig.topK",
  top_p: "generationConfig.topP",
  temperature: "generationConfig.temperature",
  stop: "generationConfig.stopSequences",
  max_tokens: "generationConfig.maxOutputTokens",
  logprobs: "generationConfig.responseLogprobs",
  presence_penalty: "generationConfig.presencePenalty",
  frequency_penalty: "generationConfig.frequencyPenalty",
  response_format: "generationConfig.responseMimeType",
};

/** The message with the parameter it names in Gemini's terms. */
export function geminiMessageOf(err: GatewayError): string {
  const name = err.param === null ? undefined : GEMINI_PARAM[err.param];
  return name === undefined ? err.message : err.message.split(`'${err.param}'`).join(`'${name}'`);
}

export const renderGeminiError: ErrorRenderer = (err, requestId) => ({
  status: err.status,
  body: JSON.stringify(geminiErrorPayload(err.status, err.kind, geminiMessageOf(err), requestId)),
});

/**
 * Google answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID; the gateway treats it
 * as what it is, an authentication failure.
 */
export function parseGeminiUpstreamError(status: number, body: string): UpstreamErrorInfo {
  const e = obj(obj(parseJsonLoose(body)).error);
  const reasons = JSON.stringify(e.details ?? []);
  const code = num(e.code) || status;
  return {
    kind: reasons.includes("API_KEY_INVALID") ? "authentication" : kindOfStatus(code),
    code: str(e.status) ?? `http_${status}`,
    message: str(e.message) ?? (body.trim().slice(0, 500) || `Upstream answered HTTP ${status}.`),
    param: null,
  };
}
