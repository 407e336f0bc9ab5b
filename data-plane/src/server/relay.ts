import type { ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import type { CanonicalStreamEvent, ProtocolAdapter, StreamDecoder, StreamEncoder } from "../protocols/index.ts";
import { SseParser, type SseEvent } from "../protocols/sse.ts";
import type { Answer } from "../upstreams/upstream-call.ts";
import type { Call } from "./call.ts";
import { sendJson } from "./respond.ts";
import { tokensFromChars } from "../usage/record.ts";

// Relaying an upstream answer to the client, for the two general cases:
// - passthrough: client and upstream speak the same protocol and the model name needs no rewriting, so the
//   upstream's bytes go out unchanged and the decoder only reads usage;
// - translate: the upstream's answer is decoded into canonical events and encoded in the client's protocol.
// (OpenAI to OpenAI has its own lean relay in relay-openai.ts.)

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

/** A stream's head goes out with its first chunk, in one write; an upstream slower than this to send one gets it alone. */
const HEAD_ALONE_AFTER_MS = 20;

/** An event stream's writes, one upstream chunk at a time. */
export interface EventStream {
  /** Runs `relay(chunk)`, whose writes (and, the first time, the head) leave in one write. */
  chunk<T>(relay: (chunk: T) => void, chunk: T): void;
  /** The relay is over: the head no longer waits for a chunk. */
  end(): void;
}

/**
 * Starts an event stream. The head waits to travel with the first chunk, so the client's first byte costs
 * one packet, not two; an upstream slower than HEAD_ALONE_AFTER_MS to send one gets it alone.
 */
export function startEventStream(res: ServerResponse, headers: Record<string, string>): EventStream {
  res.writeHead(200, headers);
  const t = setTimeout(() => {
    if (!res.destroyed) res.flushHeaders();
  }, HEAD_ALONE_AFTER_MS);
  return {
    chunk(relay, chunk) {
      clearTimeout(t);
      res.cork();
      try {
        relay(chunk);
      } finally {
        res.uncork();
      }
    },
    end: () => clearTimeout(t),
  };
}

const streamBroke = () => new GatewayError("upstream", "upstream_stream_error", "The upstream stream failed before it finished.");

/** Non-streaming: read the body, take usage from it, send it on (re-rendered when translating). */
export async function relayJson(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  upstreamAdapter: ProtocolAdapter,
  render: ((canonical: ReturnType<ProtocolAdapter["parseUpstreamResponse"]>) => Record<string, unknown>) | null,
  headers: Record<string, string>,
): Promise<void> {
  let text: string;
  try {
    text = await answer.upstream.text();
  } catch {
    answer.settle(false);
    throw streamBroke();
  }
  call.firstByte();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    answer.settle(false);
    throw new GatewayError("upstream", "upstream_bad_response", "The upstream answered with invalid JSON.");
  }
  answer.settle(true);
  const canonical = upstreamAdapter.parseUpstreamResponse(parsed);
  const u = canonical.usage;
  if (u.promptTokens === 0 && u.completionTokens === 0) {
    // No usage in the answer: never billed 0 by omission. The gateway counts it (flagged estimated) and the
    // client gets that count.
    for (const p of canonical.content) call.deliveredChars += p.type === "tool_call" ? p.arguments.length : p.text.length;
    canonical.usage = { ...u, promptTokens: call.admission.estimatedPromptTokens, completionTokens: tokensFromChars(call.deliveredChars) };
    call.setUsage(canonical.usage);
  } else {
    call.setUsage(u);
    call.usageComplete = true;
  }
  const body = render ? JSON.stringify(render(canonical)) : text;
  await call.finish(200); // the charge is durable before the answer goes out
  sendJson(res, 200, body, headers);
}

export interface StreamRelay {
  decoder: StreamDecoder;
  /** null: passthrough (the upstream's events go out as they are, through `passthrough`) */
  encoder: StreamEncoder | null;
  /** passthrough only: re-frames the upstream's events unchanged, except error events (re-shaped) */
  passthrough?: PassthroughFramer;
  /** frames a gateway error for the client's protocol when the stream breaks (passthrough only) */
  errorFrame: (err: GatewayError) => string;
  /** wraps encoded frames for the wire (Gemini's JSON-array streaming) */
  wrap?: ArrayStreamWrapper;
  contentType?: string;
}

/**
 * Streams chunk by chunk as bytes arrive (no buffering beyond one incomplete event). A break before the end
 * ends the client's stream with its protocol's error event; the call is charged for what was delivered.
 */
export async function relayStream(call: Call, res: ServerResponse, answer: Answer, relay: StreamRelay, headers: Record<string, string>): Promise<void> {
  const stream = startEventStream(res, { ...SSE_HEADERS, ...(relay.contentType ? { "content-type": relay.contentType } : {}), ...headers });
  call.streaming = true;
  const out = (s: string) => {
    if (s && !res.destroyed) res.write(relay.wrap ? relay.wrap.frames(s) : s);
  };
  let status = 200;
  let errorCode: string | null = null;
  const handle = (events: CanonicalStreamEvent[]) => {
    for (const ev of events) {
      call.observe(ev);
      if (ev.type === "error") {
        status = 502;
        errorCode = ev.error.code;
      }
      if (relay.encoder) out(relay.encoder.encode(ev));
    }
  };
  const relayChunk = (chunk: Buffer) => {
    if (relay.passthrough) out(relay.passthrough.push(chunk));
    handle(relay.decoder.push(chunk));
  };
  try {
    for await (const chunk of answer.upstream.body) {
      call.firstByte();
      stream.chunk(relayChunk, chunk);
    }
    if (relay.passthrough) out(relay.passthrough.end());
    handle(relay.decoder.end());
    answer.settle(status === 200);
    call.usageComplete = status === 200 && call.usage !== null;
  } catch {
    if (res.destroyed) {
      status = 499;
      errorCode = "client_closed";
      answer.settle(true);
    } else {
      answer.settle(false);
      status = 502;
      errorCode = "upstream_stream_error";
      const err = streamBroke();
      if (relay.encoder) handle([{ type: "error", error: err }]);
      else out(relay.errorFrame(err));
    }
  }
  stream.end();
  await call.finish(status, errorCode); // the charge is durable before the stream's last byte
  if (!res.destroyed) res.end(relay.wrap ? relay.wrap.close() : undefined);
}

/**
 * Same-protocol passthrough at the event level: every upstream SSE event goes out with its own data, framed
 * as the vendor frames it, except an error event, which is replaced by the gateway's (same protocol, plus
 * the request id). Nothing follows an error.
 */
export class PassthroughFramer {
  private readonly parser = new SseParser();
  private stopped = false;

  constructor(
    private readonly protocol: "anthropic" | "gemini",
    private readonly errorFrame: (err: GatewayError) => string,
  ) {}

  push(chunk: Uint8Array): string {
    return this.frames(this.parser.push(chunk));
  }

  end(): string {
    return this.frames(this.parser.flush());
  }

  private frames(events: SseEvent[]): string {
    let out = "";
    for (const ev of events) {
      if (this.stopped) break;
      const message = this.errorMessage(ev);
      if (message !== null) {
        this.stopped = true;
        out += this.errorFrame(new GatewayError("upstream", "upstream_stream_error", `The upstream failed mid-stream: ${message}`));
        break;
      }
      out += this.protocol === "anthropic" ? `event: ${ev.event ?? "message"}\ndata: ${ev.data}\n\n` : `data: ${ev.data}\r\n\r\n`;
    }
    return out;
  }

  /** The upstream's error message when this event is an error, else null. */
  private errorMessage(ev: SseEvent): string | null {
    const isError = this.protocol === "anthropic" ? ev.event === "error" : ev.data.startsWith('{"error"') || ev.data.includes('"error":{');
    if (!isError) return null;
    try {
      const body = JSON.parse(ev.data) as { error?: { message?: unknown } };
      if (!body.error) return null;
      return typeof body.error.message === "string" ? body.error.message : "unknown error";
    } catch {
      return null;
    }
  }
}

/**
 * Gemini without `alt=sse` streams one JSON array, element by element. The encoder writes SSE frames
 * (`data: {...}\r\n\r\n`); this turns each into an array element.
 */
export class ArrayStreamWrapper {
  private started = false;
  frames(sse: string): string {
    let out = "";
    for (const block of sse.split("\r\n\r\n")) {
      if (!block.startsWith("data: ")) continue;
      out += (this.started ? ",\r\n" : "[") + block.slice(6);
      this.started = true;
    }
    return out;
  }
  close(): string {
    return this.started ? "]" : "[]";
  }
}
