import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { GatewayError } from "../errors.ts";
import { type ProtocolName, adapters, protocols } from "../protocols/index.ts";
import { newRequestId } from "../server/request-id.ts";
import { requestIdHeaderLines, sendError, setRequestId } from "../server/respond.ts";

// What Node's HTTP parser refuses before any handler runs (headers too large, a bad Content-Length, a
// request that did not arrive in time, an Expect it does not know) is answered like every other refusal:
// in the caller's protocol shape with a request id, instead of Node's bare status line.

/** The protocol a request speaks, guessed from its path alone (all there is before the headers parse). */
export function protocolOfPath(path: string): ProtocolName {
  const owner =
    adapters.find((a) => a.endpoints.some((e) => e.match(path, null) !== null)) ??
    adapters.find((a) => a.speaks?.({}, path, null));
  return owner?.name ?? "openai";
}

interface ParserError extends Error {
  code?: string;
  rawPacket?: Buffer;
}

function refusalOf(err: ParserError): GatewayError {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return new GatewayError(
        "invalid_request",
        "headers_too_large",
        "The request headers are too large.",
        null,
        {},
        431,
      );
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new GatewayError(
        "invalid_request",
        "request_timeout",
        "The request did not arrive in time.",
        null,
        {},
        408,
      );
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return new GatewayError("invalid_request", "bad_content_length", "The Content-Length header is invalid.");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new GatewayError("too_large", "request_too_large", "The chunk extensions are too large.");
    default:
      return new GatewayError("invalid_request", "malformed_request", "The request is not valid HTTP/1.1.");
  }
}

/** Installs the shaped answers on a server (all three of modelgate's servers use it). */
export function shapeParserErrors(server: Server): Server {
  server.on("clientError", (err: ParserError, socket: Duplex) => {
    // A reset or a socket already gone has nobody to answer.
    if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    // A response already under way on this socket (a request timed out mid-answer) cannot get a second one.
    const pending = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending?.headersSent) return void socket.destroy();
    // The path, from the request being answered (a timed-out body) or the raw bytes the parser refused.
    const line = err.rawPacket?.toString("latin1", 0, Math.min(err.rawPacket.length, 2048)) ?? "";
    const path = (pending?.req?.url ?? /^[A-Z]+ (\S+)/.exec(line)?.[1] ?? "/").split("?")[0]!;
    const requestId = newRequestId();
    const gw = refusalOf(err);
    const { status, body } = protocols[protocolOfPath(path)].renderError(gw, requestId);
    const head =
      `HTTP/1.1 ${status} ${statusText(status)}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `${requestIdHeaderLines(requestId)}connection: close\r\n\r\n`;
    socket.end(head + body);
    // A client that never reads its answer does not keep the socket.
    setTimeout(() => socket.destroy(), 1_000).unref();
  });
  // Node answers an Expect other than 100-continue with a bare 417; this gives it the shape.
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    const requestId = newRequestId();
    setRequestId(res, requestId);
    res.shouldKeepAlive = false;
    const gw = new GatewayError(
      "invalid_request",
      "expectation_failed",
      `The Expect header '${req.headers.expect}' is not supported.`,
      null,
      {},
      417,
    );
    sendError(res, gw, protocols[protocolOfPath((req.url ?? "/").split("?")[0]!)].renderError, requestId);
  });
  return server;
}

const statusText = (s: number): string =>
  ({ 400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large", 431: "Request Header Fields Too Large" })[
    s
  ] ?? "Error";
