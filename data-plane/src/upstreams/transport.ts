import { Agent } from "undici";
import type { AbortLike } from "./call-abort.ts";
import { type AnswerLimits, ResponseHandler } from "./response-handler.ts";

/** What the proxy needs back from an upstream call: status, headers and the body as it arrives. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer>;
  /** Reads the whole body (non-streaming answers and error bodies). */
  text(): Promise<string>;
}

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string | Buffer;
  signal: AbortLike;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  /** the largest body read whole and the longest answer the gateway accepts (none: unbounded) */
  limits?: AnswerLimits | undefined;
}

export interface UpstreamTransport {
  send(req: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/**
 * undici with keep-alive pools per origin. Timeouts: connect, first byte (headersTimeout) and idle between
 * body chunks (bodyTimeout), each per upstream.
 */
export class UndiciTransport implements UpstreamTransport {
  private readonly agents = new Map<number, Agent>();

  private agent(connectTimeoutMs: number): Agent {
    let a = this.agents.get(connectTimeoutMs);
    if (!a) {
      // No cap on connections per origin: a cap would queue long streams behind each other with no first byte.
      a = new Agent({
        connect: { timeout: connectTimeoutMs },
        keepAliveTimeout: 30_000,
        connections: null,
        pipelining: 1,
      });
      this.agents.set(connectTimeoutMs, a);
    }
    return a;
  }

  send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const { origin, path } = splitUrl(req.url);
    const handler = new ResponseHandler(req.signal, req.limits ?? null);
    try {
      this.agent(req.connectTimeoutMs).dispatch(
        {
          origin,
          path,
          method: "POST",
          headers: req.headers,
          body: req.body,
          headersTimeout: req.firstByteTimeoutMs,
          bodyTimeout: req.idleTimeoutMs,
        },
        handler,
      );
    } catch (err) {
      handler.onError(err as Error);
    }
    return handler.response;
  }

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((a) => a.close()));
  }
}

// Upstream URLs are few (base URL × path per route): parse each once, not twice per call.
const parsed = new Map<string, { origin: string; path: string }>();

function splitUrl(url: string): { origin: string; path: string } {
  let p = parsed.get(url);
  if (p === undefined) {
    const u = new URL(url);
    p = { origin: u.origin, path: u.pathname + u.search };
    if (parsed.size >= 10_000) parsed.clear(); // Gemini paths carry the model name; bound the map anyway
    parsed.set(url, p);
  }
  return p;
}
