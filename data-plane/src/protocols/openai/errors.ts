import { type ErrorRenderer, type GatewayErrorKind, withRequestId } from "../../errors.ts";
import type { UpstreamErrorInfo } from "../canonical.ts";
import { kindOfStatus, obj, parseJsonLoose, str } from "../shared.ts";

const typeOfKind: Record<GatewayErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "invalid_request_error",
  payment_required: "insufficient_quota",
  permission: "permission_error",
  not_found: "invalid_request_error",
  too_large: "invalid_request_error",
  rate_limit: "rate_limit_error",
  upstream: "api_error",
  timeout: "api_error",
  unavailable: "api_error",
  internal: "api_error",
};

/** OpenAI's error shape: {"error":{"message","type","param","code"}}. */
export const renderOpenAIError: ErrorRenderer = (err, requestId) => ({
  status: err.status,
  body: JSON.stringify({
    error: {
      message: withRequestId(err.message, requestId),
      type: typeOfKind[err.kind],
      param: err.param,
      code: err.code,
    },
  }),
});

/**
 * An OpenAI-protocol upstream's error body → kind/code/message. The kind follows the HTTP status
 * (vendors agree on statuses more than on type names); the code is OpenAI's `code`, else its `type`.
 */
export function parseOpenAIUpstreamError(status: number, body: string): UpstreamErrorInfo {
  const e = obj(obj(parseJsonLoose(body)).error);
  const message = str(e.message) ?? (body.trim().slice(0, 500) || `Upstream answered HTTP ${status}.`);
  return {
    kind: kindOfStatus(status),
    code: str(e.code) ?? str(e.type) ?? `http_${status}`,
    message,
    param: str(e.param) ?? null,
  };
}
