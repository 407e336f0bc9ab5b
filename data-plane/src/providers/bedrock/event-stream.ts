// Bedrock streams answers in AWS's binary event stream (application/vnd.amazon.eventstream): length-prefixed
// messages with typed headers and CRCs. The protocol decoders read SSE, so each message is re-framed as one SSE
// event as it arrives, decoded with AWS's own codec; a message split across chunks waits for its rest, and
// nothing else is held back.
//
//   InvokeModelWithResponseStream (Anthropic's models): `chunk` events whose payload is {"bytes": base64 of one
//   Anthropic stream event}: the event itself, as Anthropic's API would have sent it.
//   ConverseStream: events named by `:event-type` (messageStart, contentBlockDelta, …, metadata) with their JSON.
//   Either: an `exception` message (throttlingException, modelStreamErrorException, …) or an `error` message
//   becomes an `event: error` each decoder reads.

import { EventStreamCodec } from "@smithy/eventstream-codec";
import type { Message } from "@smithy/types";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { maxEventCharsNow } from "../../protocols/sse.ts";
import type { UpstreamResponse } from "../../upstreams/transport.ts";

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** The prelude: total length (4 bytes), headers length (4), prelude CRC (4); then the message CRC (4) at its end. */
const MIN_MESSAGE = 16;

/** Anthropic's name for the error a Bedrock exception stands for (its decoder classifies by that name). */
function anthropicErrorType(exception: string): string {
  const n = exception.toLowerCase();
  if (n.startsWith("throttling") || n.startsWith("servicequotaexceeded")) return "rate_limit_error";
  if (n.startsWith("validation")) return "invalid_request_error";
  if (n.startsWith("serviceunavailable") || n.startsWith("modelnotready")) return "overloaded_error";
  if (n.startsWith("modeltimeout")) return "timeout_error";
  return "api_error";
}

const header = (m: Message, name: string): string | undefined => {
  const h = m.headers[name];
  return h !== undefined && h.type === "string" ? h.value : undefined;
};

/** Bedrock's own accounting on Anthropic's message_stop: the client is not told which upstream served it. */
const METRICS = "amazon-bedrock-invocationMetrics";

/** The type of an Anthropic event's JSON, which Anthropic writes first ({"type":"content_block_delta",…}). */
function anthropicEventType(json: string): { type: string; json: string } {
  const m = /^\{\s*"type"\s*:\s*"([^"]+)"/.exec(json);
  if (m && !json.includes(METRICS)) return { type: m[1]!, json };
  const parsed = JSON.parse(json) as Record<string, unknown>;
  delete parsed[METRICS];
  return { type: typeof parsed.type === "string" ? parsed.type : "message", json: JSON.stringify(parsed) };
}

export type StreamDialect = "anthropic" | "converse";

/** One event-stream message as the SSE event the dialect's decoder reads. */
export function sseOfMessage(m: Message, dialect: StreamDialect): string {
  const kind = header(m, ":message-type") ?? "event";
  if (kind === "event") {
    const payload = toUtf8(m.body);
    if (dialect === "converse") return `event: ${header(m, ":event-type") ?? "message"}\ndata: ${payload}\n\n`;
    const bytes = (JSON.parse(payload) as { bytes?: unknown }).bytes;
    if (typeof bytes !== "string") return "";
    const ev = anthropicEventType(Buffer.from(bytes, "base64").toString("utf8"));
    return `event: ${ev.type}\ndata: ${ev.json}\n\n`;
  }
  // An exception carries its type in a header and {"message"} as payload; an error its code and message in headers.
  const type = header(m, ":exception-type") ?? header(m, ":error-code") ?? "internalServerException";
  let message = header(m, ":error-message");
  if (message === undefined) {
    try {
      const p = JSON.parse(toUtf8(m.body)) as { message?: unknown; Message?: unknown };
      message = typeof p.message === "string" ? p.message : typeof p.Message === "string" ? p.Message : undefined;
    } catch {
      message = undefined;
    }
  }
  message ??= "The upstream stream failed.";
  const data =
    dialect === "converse" ? { type, message } : { type: "error", error: { type: anthropicErrorType(type), message } };
  return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Cuts a byte stream into whole event-stream messages; a message may span any number of chunks. */
export class MessageSplitter {
  private pending: Buffer | null = null;

  /** The messages this chunk completes (possibly none). Throws on a message that cannot be read. */
  push(chunk: Buffer): Message[] {
    let buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    const out: Message[] = [];
    while (buf.length >= 4) {
      const total = buf.readUInt32BE(0);
      if (total < MIN_MESSAGE || total > maxEventCharsNow() + 1024)
        throw new Error(`an event-stream message of ${total} bytes cannot be read`);
      if (buf.length < total) break;
      // The codec checks both CRCs and throws on a corrupt message.
      out.push(codec.decode(buf.subarray(0, total)));
      buf = buf.subarray(total);
    }
    // What remains is the start of a message: copied, so the chunk it came in is not held whole.
    if (buf.length > 0) this.pending = Buffer.from(buf);
    return out;
  }

  /** Bytes of a message that never completed. */
  get leftover(): number {
    return this.pending?.length ?? 0;
  }
}

async function* reframe(body: AsyncIterable<Buffer>, dialect: StreamDialect): AsyncGenerator<Buffer> {
  const splitter = new MessageSplitter();
  for await (const chunk of body) {
    let messages: Message[];
    try {
      messages = splitter.push(chunk);
    } catch (err) {
      const message = `The upstream sent an unreadable stream (${(err as Error).message}).`;
      const ev = sseOfMessage(
        {
          headers: {
            ":message-type": { type: "string", value: "error" },
            ":error-message": { type: "string", value: message },
          },
          body: new Uint8Array(),
        },
        dialect,
      );
      yield Buffer.from(ev);
      return;
    }
    let text = "";
    for (const m of messages) text += sseOfMessage(m, dialect);
    if (text !== "") yield Buffer.from(text);
  }
}

/** A 2xx streamed answer with its body re-framed as SSE; any other answer as it is. */
export function reframeAnswer(res: UpstreamResponse, dialect: StreamDialect): UpstreamResponse {
  const type = res.headers["content-type"];
  if (typeof type !== "string" || !type.startsWith("application/vnd.amazon.eventstream")) return res;
  const body = reframe(res.body, dialect);
  return {
    status: res.status,
    headers: { ...res.headers, "content-type": "text/event-stream" },
    body,
    text: async () => {
      let out = "";
      for await (const b of body) out += b.toString("utf8");
      return out;
    },
  };
}
