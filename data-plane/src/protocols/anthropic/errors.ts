// Anthropic's error shape, both ways: {"type":"error","error":{"type","message"},"request_id"}.

import { type ErrorRenderer, type GatewayErrorKind, withRequestId } from "../../errors.ts";
import type { UpstreamErrorInfo } from "../canonical.ts";
import { kindOfStatus, obj, parseJsonLoose, str } from "../shared.ts";

const typeOfKind: Record<GatewayErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  payment_required: "billing_error",
  permission: "permission_error",
  not_found: "not_found_error",
  too_large: "request_too_large",
  rate_limit: "rate_limit_error",
  upstream: "api_error",
  timeout: "timeout_error",
  unavailable: "overloaded_error",
  internal: "api_error",
};

/** The error object alone, as it also appears in a stream's `event: error`. */
export const anthropicErrorPayload = (
  kind: GatewayErrorKind,
  message: string,
  requestId: string,
): Record<string, unknown> => ({
  type: "error",
  error: { type: typeOfKind[kind], message: withRequestId(message, requestId) },
  request_id: requestId,
});

export const renderAnthropicError: ErrorRenderer = (err, requestId) => ({
  status: err.status,
  body: JSON.stringify(anthropicErrorPayload(err.kind, err.message, requestId)),
});

/** Anthropic names its error types, so its type is kept as the code (e.g. overloaded_error). */
export function parseAnthropicUpstreamError(status: number, body: string): UpstreamErrorInfo {
  const e = obj(obj(parseJsonLoose(body)).error);
  return {
    kind: kindOfStatus(status),
    code: str(e.type) ?? `http_${status}`,
    message: str(e.message) ?? (body.trim().slice(0, 500) || `Upstream answered HTTP ${status}.`),
    param: null,
  };
}
