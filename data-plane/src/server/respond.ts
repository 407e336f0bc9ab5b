import type { ServerResponse } from "node:http";
import { GatewayError, type ErrorRenderer } from "../errors.ts";

export const REQUEST_ID_HEADER = "X-Gateway-Request-Id";

export function sendJson(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Renders any failure in the client's protocol; unexpected errors become a masked 500. */
export function sendError(res: ServerResponse, err: unknown, render: ErrorRenderer, requestId: string): GatewayError {
  const gw = err instanceof GatewayError ? err : new GatewayError("internal", "internal_error", "Internal gateway error.");
  const { status, body } = render(gw, requestId);
  sendJson(res, status, body, gw.headers);
  return gw;
}
