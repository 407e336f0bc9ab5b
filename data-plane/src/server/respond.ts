import type { ServerResponse } from "node:http";
import { GatewayError, type ErrorRenderer } from "../errors.ts";

export const REQUEST_ID_HEADER = "X-Gateway-Request-Id";

const REQUEST_ID = Symbol("modelgate.requestId");
type WithRequestId = ServerResponse & { [REQUEST_ID]?: string };

/**
 * The request id under every name a client reads it: ours, the openai SDK's (`x-request-id`, its
 * `_request_id`) and the Anthropic SDK's (`request-id`, its `requestID`). All three carry the same value.
 * Kept on the response and written with its head (every head goes out through `withRequestId`): three
 * setHeader calls before writeHead sent Node down its slow path of merging the two, 2.4 µs against 1.1 µs for
 * the same head passed to writeHead alone (1.2% of the data plane's busy time at c=64).
 */
export function setRequestId(res: ServerResponse, requestId: string): void {
  (res as WithRequestId)[REQUEST_ID] = requestId;
}

/** Adds the response's request id headers, if it has an id, to a head about to be written (a fresh object). */
export function withRequestId<H extends Record<string, string | number>>(res: ServerResponse, head: H): H {
  const id = (res as WithRequestId)[REQUEST_ID];
  if (id !== undefined) {
    const h = head as Record<string, string | number>;
    h[REQUEST_ID_HEADER] = id;
    h["x-request-id"] = id;
    h["request-id"] = id;
  }
  return head;
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
  res.writeHead(
    status,
    withRequestId(res, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers }),
  );
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
