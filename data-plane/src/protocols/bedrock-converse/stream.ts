// ConverseStream → canonical events. Bedrock streams in AWS's binary event stream; the Bedrock provider
// (providers/bedrock/event-stream.ts) re-frames each message as one SSE event named by its `:event-type`
// (messageStart, contentBlockStart, contentBlockDelta, contentBlockStop, messageStop, metadata) with the JSON
// payload as its data, and an exception message as `event: error` with {type, message}. This reads that.

import { GatewayError, type GatewayErrorKind } from "../../errors.ts";
import type { CanonicalStreamEvent } from "../canonical.ts";
import type { SseEvent } from "../sse.ts";
import { type DecoderState, sseStreamDecoder } from "../sse-decoder.ts";
import { type Json, num, obj, str, upstreamStreamError, nowSeconds } from "../shared.ts";
import type { StreamDecoder } from "../types.ts";
import { converseId, finishOfConverse, usageOfConverse } from "./response.ts";

interface State extends DecoderState {
  started: boolean;
  /** Converse content block index → canonical tool index, for toolUse blocks only. */
  toolOfBlock: Map<number, number>;
}

/** An exception's kind, from its name (throttlingException, validationException, …). */
export function kindOfException(name: string | undefined): GatewayErrorKind {
  const n = (name ?? "").toLowerCase();
  if (n.startsWith("throttling") || n.startsWith("servicequotaexceeded")) return "rate_limit";
  if (n.startsWith("validation")) return "invalid_request";
  if (n.startsWith("serviceunavailable") || n.startsWith("modelnotready")) return "unavailable";
  if (n.startsWith("modeltimeout")) return "timeout";
  if (n.startsWith("accessdenied")) return "permission";
  return "upstream";
}

function decodeEvent(ev: SseEvent, s: State, out: CanonicalStreamEvent[]): void {
  if (s.closed) return;
  let data: Json;
  try {
    data = obj(JSON.parse(ev.data));
  } catch {
    s.closed = true;
    out.push({
      type: "error",
      error: upstreamStreamError("upstream", "malformed_stream", "The upstream sent a malformed stream event."),
    });
    return;
  }
  const start = () => {
    if (s.started) return;
    s.started = true;
    out.push({ type: "start", id: converseId(), model: "", created: nowSeconds() });
  };
  switch (ev.event) {
    case "messageStart":
      start();
      return;
    case "contentBlockStart": {
      start();
      const tool = obj(obj(data.start).toolUse);
      if (str(tool.name) === undefined) return;
      const index = s.toolOfBlock.size;
      s.toolOfBlock.set(num(data.contentBlockIndex), index);
      out.push({ type: "tool_call_start", index, id: str(tool.toolUseId) ?? "", name: str(tool.name) ?? "" });
      return;
    }
    case "contentBlockDelta": {
      start();
      const d = obj(data.delta);
      if (typeof d.text === "string") {
        if (d.text !== "") out.push({ type: "text", text: d.text });
      } else if (d.toolUse !== undefined) {
        const tool = s.toolOfBlock.get(num(data.contentBlockIndex));
        const input = str(obj(d.toolUse).input) ?? "";
        if (tool !== undefined && input !== "") out.push({ type: "tool_call_delta", index: tool, arguments: input });
      } else if (d.reasoningContent !== undefined) {
        const r = obj(d.reasoningContent);
        if (typeof r.text === "string" && r.text !== "") out.push({ type: "thinking", text: r.text });
        else if (typeof r.signature === "string") out.push({ type: "thinking_signature", signature: r.signature });
      }
      return;
    }
    case "messageStop":
      start();
      if (!s.finished) {
        s.finished = true;
        out.push({ type: "finish", reason: finishOfConverse(data.stopReason) });
      }
      return;
    case "metadata":
      // The last event: usage (and latency), after messageStop.
      out.push({ type: "usage", usage: usageOfConverse(data.usage) });
      s.closed = true;
      out.push({ type: "end" });
      return;
    case "error":
      s.closed = true;
      out.push({
        type: "error",
        error: new GatewayError(
          kindOfException(str(data.type)),
          str(data.type) ?? "upstream_error",
          str(data.message) ?? "Upstream stream error.",
        ),
      });
      return;
    default: // contentBlockStop, and event types added later
      return;
  }
}

// ConverseStream ends with metadata; a stream that stops after messageStop without it has ended (its usage is
// then the gateway's estimate), one that stops before messageStop was cut off.
export const createConverseStreamDecoder = (): StreamDecoder =>
  sseStreamDecoder<State>(
    { started: false, finished: false, closed: false, toolOfBlock: new Map() },
    decodeEvent,
    (s) =>
      s.finished
        ? { type: "end" }
        : {
            type: "error",
            error: upstreamStreamError("upstream", "stream_truncated", "The upstream stream ended before messageStop."),
          },
  );
