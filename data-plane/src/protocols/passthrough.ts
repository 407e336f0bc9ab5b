// Same-protocol relaying for protocols whose streams are plain SSE events (Anthropic, Gemini): every upstream
// event goes out with its own data, framed as the vendor frames it, except an error event, which is replaced
// by the gateway's (same protocol, plus the request id); nothing follows an error. The protocol's own stream
// decoder reads the same bytes for usage.

import { GatewayError } from "../errors.ts";
import { invalid } from "./shared.ts";
import { replaceModelField } from "./openai/model-field.ts";
import type { CanonicalResponse, CanonicalStreamEvent, Usage } from "./canonical.ts";
import { SseParser, type SseEvent } from "./sse.ts";
import type { ClientRoute, Passthrough, PassthroughStream, RequestHead, StreamDecoder } from "./types.ts";
import { tokensFromChars } from "../usage/record.ts";
import { usableUsage } from "./shared.ts";

export interface SsePassthroughSpec {
  head: Passthrough["head"];
  forwardsHeader?: Passthrough["forwardsHeader"];
  /** The body to send (default: the client's bytes). */
  body?: Passthrough["body"];
  path(upstreamModel: string, stream: boolean): string;
  /** Only when the upstream's answer needs no rewriting (the model name is the client's). */
  accepts?(req: RequestHead, upstreamModel: string, route?: ClientRoute): boolean;
  frame(ev: SseEvent): string;
  /**
   * An answer or event (JSON text) with the client's model name put back where the upstream wrote its own;
   * the text itself when nothing needs changing. Absent: the answer never names the model.
   */
  renamed?(text: string, clientModel: string): string;
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
    head: spec.head,
    forwardsHeader: spec.forwardsHeader,
    accepts: spec.accepts,
    body: spec.body ?? ((raw) => raw),
    path: spec.path,
    readJson(text, clientModel, estimatedPromptTokens) {
      const canonical = spec.parseResponse(parseUpstreamJson(text));
      const u = canonical.usage;
      if (spec.renamed) text = spec.renamed(text, clientModel);
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
    createStream(clientModel, requestId): PassthroughStream {
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
          out += spec.frame(spec.renamed ? { ...ev, data: spec.renamed(ev.data, clientModel) } : ev);
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

/**
 * The head of a same-protocol request: the model (a non-empty string) and the stream flag, read without
 * validating anything else, which is the upstream's to judge. A bad model or flag is the client's 400.
 */
export function readHead(body: Record<string, unknown>): RequestHead {
  const model = body.model;
  if (typeof model !== "string" || model === "")
    throw typeof model === "undefined"
      ? invalid("missing_required_parameter", "Missing required parameter: 'model'.", "model")
      : invalid("invalid_type", "Invalid 'model': expected a non-empty string.", "model");
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    throw invalid("invalid_type", "Invalid 'stream': expected a boolean.", "stream");
  return { model, stream: stream === true };
}

/**
 * `text` (a JSON answer or event) with the string field `key` set to the client's model name wherever the
 * upstream wrote another, found at the top level or one object down (`under`: Anthropic's message_start has
 * it in `message`). The common case, the client's own name already there, costs two substring searches.
 */
export function renameModel(text: string, clientModel: string, key: string, under?: string): string {
  const quotedKey = JSON.stringify(key);
  if (!text.includes(quotedKey)) return text;
  const value = JSON.stringify(clientModel);
  if (text.includes(`${quotedKey}:${value}`) || text.includes(`${quotedKey}: ${value}`)) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return text;
  const top = parsed as Record<string, unknown>;
  const inner = under !== undefined ? (top[under] as Record<string, unknown> | null | undefined) : undefined;
  const holder =
    typeof top[key] === "string"
      ? top
      : inner && typeof inner === "object" && typeof inner[key] === "string"
        ? inner
        : null;
  if (holder === null) return text;
  const replaced = replaceModelField(text, holder[key] as string, clientModel, quotedKey);
  if (replaced !== null) return replaced;
  holder[key] = clientModel;
  return JSON.stringify(top);
}
