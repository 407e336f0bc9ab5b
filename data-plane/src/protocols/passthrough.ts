// Same-protocol relaying for protocols whose streams are plain SSE events (Anthropic, Gemini): every upstream
// event goes out with its own data, framed as the vendor frames it, except an error event, which is replaced
// by the gateway's (same protocol, plus the request id); nothing follows an error. The protocol's own stream
// decoder reads the same bytes for usage.

import { GatewayError } from "../errors.ts";
import type { CanonicalRequest, CanonicalResponse, CanonicalStreamEvent, Usage } from "./canonical.ts";
import { SseParser, type SseEvent } from "./sse.ts";
import type { ClientRoute, Passthrough, PassthroughStream, StreamDecoder } from "./types.ts";
import { tokensFromChars } from "../usage/record.ts";
import { usableUsage } from "./shared.ts";

export interface SsePassthroughSpec {
  /** The body to send (default: the client's bytes). */
  body?: Passthrough["body"];
  path(upstreamModel: string, stream: boolean): string;
  /** Only when the upstream's answer needs no rewriting (the model name is the client's). */
  accepts?(req: CanonicalRequest, upstreamModel: string, route?: ClientRoute): boolean;
  frame(ev: SseEvent): string;
  /** The upstream's error message when this event is an error, else null. */
  errorMessage(ev: SseEvent): string | null;
  errorFrame(err: GatewayError, requestId: string): string;
  decoder(): StreamDecoder;
  parseResponse(body: unknown): CanonicalResponse;
}

/** Reads what canonical events say about usage and delivered output (the decoder runs beside the bytes). */
export class EventTally {
  usage: Usage | null = null;
  deliveredChars = 0;
  error: GatewayError | null = null;
  complete = false;
  observe(events: CanonicalStreamEvent[]): void {
    for (const ev of events) {
      switch (ev.type) {
        case "text":
        case "thinking":
          this.deliveredChars += ev.text.length;
          break;
        case "tool_call_delta":
          this.deliveredChars += ev.arguments.length;
          break;
        case "usage":
          this.usage = ev.usage;
          break;
        case "start":
          if (ev.usage) this.usage = ev.usage;
          break;
        case "error":
          this.error ??= ev.error;
          break;
        case "end":
          this.complete = true;
          break;
      }
    }
  }
}

export const parseUpstreamJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new GatewayError("upstream", "upstream_bad_response", "The upstream answered with invalid JSON.");
  }
};

export function ssePassthrough(spec: SsePassthroughSpec): Passthrough {
  return {
    accepts: spec.accepts,
    body: spec.body ?? ((raw) => raw),
    path: spec.path,
    readJson(text, _clientModel, estimatedPromptTokens) {
      const canonical = spec.parseResponse(parseUpstreamJson(text));
      const u = canonical.usage;
      // A report the gateway cannot read (see shared.ts, count) counts as none.
      if (usableUsage(u) && (u.promptTokens !== 0 || u.completionTokens !== 0))
        return { body: text, usage: u, exact: true, deliveredChars: 0 };
      // No usage in the answer: never billed 0 by omission; the bytes go out as they came.
      let chars = 0;
      for (const p of canonical.content) chars += p.type === "tool_call" ? p.arguments.length : p.text.length;
      return {
        body: text,
        usage: { ...u, promptTokens: estimatedPromptTokens, completionTokens: tokensFromChars(chars) },
        exact: false,
        deliveredChars: chars,
      };
    },
    createStream(_clientModel, requestId): PassthroughStream {
      const parser = new SseParser();
      const decoder = spec.decoder();
      const tally = new EventTally();
      let stopped = false;
      let replaced: GatewayError | null = null;
      const frames = (events: SseEvent[]): string => {
        let out = "";
        for (const ev of events) {
          if (stopped) break;
          const message = spec.errorMessage(ev);
          if (message !== null) {
            stopped = true;
            replaced = new GatewayError(
              "upstream",
              "upstream_stream_error",
              `The upstream failed mid-stream: ${message}`,
            );
            out += spec.errorFrame(replaced, requestId);
            break;
          }
          out += spec.frame(ev);
        }
        return out;
      };
      return {
        push(chunk) {
          const out = frames(parser.push(chunk));
          tally.observe(decoder.push(chunk));
          return out;
        },
        end() {
          const out = frames(parser.flush());
          tally.observe(decoder.end());
          return out;
        },
        get usage() {
          return tally.usage;
        },
        get deliveredChars() {
          return tally.deliveredChars;
        },
        get error() {
          return replaced ?? tally.error;
        },
        get complete() {
          return tally.complete && !replaced && !tally.error;
        },
        errorFrame: (err) => spec.errorFrame(err, requestId),
      };
    },
  };
}

/** The message of an SSE event's `{"error":{"message"}}` payload, or null when it carries none. */
export function errorMessageOf(data: string): string | null {
  try {
    const body = JSON.parse(data) as { error?: { message?: unknown } };
    if (!body.error) return null;
    return typeof body.error.message === "string" ? body.error.message : "unknown error";
  } catch {
    return null;
  }
}
