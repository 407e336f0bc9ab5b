import type { ServerResponse } from "node:http";
import { GatewayError, type ErrorRenderer } from "../errors.ts";

export const REQUEST_ID_HEADER = "X-Gateway-Request-Id";

/**
 * The request id under every name a client reads it: ours, the openai SDK's (`x-request-id`, its
 * `_request_id`) and the Anthropic SDK's (`request-id`, its `requestID`). All three carry the same value.
 */
export function setRequestId(res: ServerResponse, requestId: string): void {
  res.setHeader(REQUEST_ID_HEADER, requestId);
  res.setHeader("x-request-id", requestId);
  res.setHeader("request-id", requestId);
}

/** The same headers as raw header lines, for answers written straight to a socket. */
export const requestIdHeaderLines = (requestId: string): string =>
  `${REQUEST_ID_HEADER}: ${requestId}\r\nx-request-id: ${requestId}\r\nrequest-id: ${requestId}\r\n`;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Renders any failure in the client's protocol; unexpected errors become a masked 500. */
export function sendError(res: ServerResponse, err: unknown, render: ErrorRenderer, requestId: string): GatewayError {
  const gw =
    err instanceof GatewayError ? err : new GatewayError("internal", "internal_error", "Internal gateway error.");
  const { status, body } = render(gw, requestId);
  sendJson(res, status, body, gw.headers);
  return gw;
}
