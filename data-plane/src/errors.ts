// A refusal the gateway itself decides (bad key, unknown model, limits, bad input, upstream failure).
// Each client protocol renders it in its own error shape; the message always ends with the request id.

export type GatewayErrorKind =
  | "invalid_request" // 400
  | "authentication" // 401
  | "payment_required" // 402
  | "permission" // 403
  | "not_found" // 404
  | "too_large" // 413
  | "rate_limit" // 429
  | "upstream" // 502
  | "timeout" // 504
  | "unavailable" // 503
  | "internal"; // 500

export const statusOfKind: Record<GatewayErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  payment_required: 402,
  permission: 403,
  not_found: 404,
  too_large: 413,
  rate_limit: 429,
  upstream: 502,
  timeout: 504,
  unavailable: 503,
  internal: 500,
};

export class GatewayError extends Error {
  readonly status: number;
  constructor(
    readonly kind: GatewayErrorKind,
    /** stable machine-readable code, e.g. invalid_api_key, model_not_found (documented in docs/errors.md) */
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    status?: number,
  ) {
    super(message);
    this.status = status ?? statusOfKind[kind];
  }
}

/** The body and status a client protocol sends for a gateway error. */
export interface RenderedError {
  status: number;
  body: string;
}

export type ErrorRenderer = (err: GatewayError, requestId: string) => RenderedError;

export const withRequestId = (message: string, requestId: string): string => `${message} (request id: ${requestId})`;
