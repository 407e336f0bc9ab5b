// The shapes shared by every protocol adapter (see index.ts for the registry).

import type { GatewayError, RenderedError } from "../errors.ts";
import type { CanonicalRequest, CanonicalResponse, CanonicalStreamEvent, ProtocolName, UpstreamErrorInfo } from "./canonical.ts";

/** What to send upstream. `path` is relative to the route's base URL; auth headers are added separately. */
export interface UpstreamRequest {
  path: string;
  /** JSON-serialisable body; the caller stringifies it once. */
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

export interface ClientRoute {
  model?: string;
  stream?: boolean;
}

export interface ClientResponseContext {
  /** The model name the client asked for, echoed back instead of the upstream's name. */
  model: string;
  requestId: string;
}

/** Turns an upstream byte stream into canonical events. One instance (one state object) per stream. */
export interface StreamDecoder {
  push(chunk: Uint8Array | string): CanonicalStreamEvent[];
  /** Call when the upstream body ends; reports a truncated stream as an error event. */
  end(): CanonicalStreamEvent[];
}

/** Turns canonical events into the client protocol's exact framing. One instance per stream. */
export interface StreamEncoder {
  /** The frames for one event; "" when the event produces nothing (yet). */
  encode(event: CanonicalStreamEvent): string;
}

export interface ProtocolAdapter {
  readonly name: ProtocolName;
  // client side
  /** Gemini carries the model and streaming in the URL, so the server passes them in `route`. */
  parseClientRequest(body: unknown, route?: ClientRoute): CanonicalRequest;
  renderClientResponse(res: CanonicalResponse, ctx: ClientResponseContext): Record<string, unknown>;
  createClientStreamEncoder(ctx: ClientResponseContext & { includeUsage?: boolean }): StreamEncoder;
  renderError(err: GatewayError, requestId: string): RenderedError;
  // upstream side
  buildUpstreamRequest(req: CanonicalRequest, upstreamModel: string, opts: { stream: boolean }): UpstreamRequest;
  authHeaders(apiKey: string): Record<string, string>;
  parseUpstreamResponse(body: unknown): CanonicalResponse;
  createUpstreamStreamDecoder(): StreamDecoder;
  parseUpstreamError(status: number, body: string): UpstreamErrorInfo;
}
