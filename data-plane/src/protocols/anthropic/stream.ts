// Anthropic Messages streams: upstream named SSE events → canonical events, canonical events → client SSE.

import { GatewayError } from "../../errors.ts";
import type { CanonicalStreamEvent, FinishReason, Usage } from "../canonical.ts";
import { emptyUsage } from "../canonical.ts";
import { type SseEvent, encodeSse } from "../sse.ts";
import { sseStreamDecoder } from "../sse-decoder.ts";
import { type Json, kindOfErrorName, nowSeconds, num, obj, str, upstreamStreamError } from "../shared.ts";
import type { ClientResponseContext, StreamDecoder, StreamEncoder } from "../types.ts";
import { anthropicErrorPayload } from "./errors.ts";
import {
  JSON_ANSWER_TOOL,
  anthropicStopReason,
  anthropicUsage,
  finishOfAnthropic,
  usageOfAnthropic,
} from "./response.ts";

interface DecodeState {
  started: boolean;
  finished: boolean;
  closed: boolean;
  /** Upstream content block index → canonical tool index, for tool_use blocks only. */
  toolOfBlock: Map<number, number>;
  /** Blocks of the forced JSON-answer tool (JSON_ANSWER_TOOL): their input streams out as text. */
  jsonBlocks: Set<number>;
  /** Raw usage as last reported; message_delta updates it field by field. */
  usage: Json;
}

function decodeEvent(ev: SseEvent, s: DecodeState, out: CanonicalStreamEvent[]): void {
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
  // The event name and data.type agree in Anthropic's streams; data.type also covers a missing event line.
  const type = ev.event ?? str(data.type);
  switch (type) {
    case "message_start": {
      const m = obj(data.message);
      s.started = true;
      s.usage = { ...obj(m.usage) };
      out.push({
        type: "start",
        id: str(m.id) ?? "",
        model: str(m.model) ?? "",
        created: nowSeconds(),
        usage: usageOfAnthropic(s.usage),
      });
      return;
    }
    case "content_block_start": {
      const block = obj(data.content_block);
      const index = num(data.index);
      if (block.type === "tool_use" && block.name === JSON_ANSWER_TOOL) {
        s.jsonBlocks.add(index);
      } else if (block.type === "tool_use") {
        const tool = s.toolOfBlock.size;
        s.toolOfBlock.set(index, tool);
        out.push({ type: "tool_call_start", index: tool, id: str(block.id) ?? "", name: str(block.name) ?? "" });
      } else if (block.type === "text" && str(block.text)) {
        out.push({ type: "text", text: str(block.text) ?? "" });
      } else if (block.type === "thinking" && str(block.thinking)) {
        out.push({ type: "thinking", text: str(block.thinking) ?? "" });
      }
      return;
    }
    case "content_block_delta": {
      const d = obj(data.delta);
      if (d.type === "text_delta") out.push({ type: "text", text: str(d.text) ?? "" });
      else if (d.type === "thinking_delta") out.push({ type: "thinking", text: str(d.thinking) ?? "" });
      else if (d.type === "signature_delta")
        out.push({ type: "thinking_signature", signature: str(d.signature) ?? "" });
      else if (d.type === "input_json_delta" && s.jsonBlocks.has(num(data.index))) {
        const partial = str(d.partial_json) ?? "";
        if (partial !== "") out.push({ type: "text", text: partial });
      } else if (d.type === "input_json_delta") {
        const tool = s.toolOfBlock.get(num(data.index));
        const partial = str(d.partial_json) ?? "";
        if (tool !== undefined && partial !== "")
          out.push({ type: "tool_call_delta", index: tool, arguments: partial });
      }
      return;
    }
    case "message_delta": {
      const d = obj(data.delta);
      // Counters in message_delta are cumulative totals that overwrite, never add (as the SDK does); null is
      // "not counted here". Any other value overwrites too, so a malformed count makes the report malformed
      // (usageOfAnthropic) instead of leaving message_start's count standing as the final one.
      for (const [k, v] of Object.entries(obj(data.usage))) if (v !== null && v !== undefined) s.usage[k] = v;
      if (d.stop_reason != null && !s.finished) {
        s.finished = true;
        out.push({
          type: "finish",
          // The forced JSON tool's call is the answer, not a call for the client to make.
          reason:
            d.stop_reason === "tool_use" && s.jsonBlocks.size > 0 && s.toolOfBlock.size === 0
              ? "stop"
              : finishOfAnthropic(d.stop_reason),
          stopSequence: str(d.stop_sequence) ?? null,
        });
      }
      out.push({ type: "usage", usage: usageOfAnthropic(s.usage) });
      return;
    }
    case "message_stop":
      s.closed = true;
      out.push({ type: "end" });
      return;
    case "error": {
      const e = obj(data.error);
      s.closed = true;
      out.push({
        type: "error",
        error: new GatewayError(
          kindOfErrorName(str(e.type)),
          str(e.type) ?? "upstream_error",
          str(e.message) ?? "Upstream stream error.",
        ),
      });
      return;
    }
    default: // ping, content_block_stop, and event types added later
      return;
  }
}

// Anthropic ends with message_stop, which closes the state; a body that ends before it was cut off.
export const createAnthropicStreamDecoder = (): StreamDecoder =>
  sseStreamDecoder<DecodeState>(
    { started: false, finished: false, closed: false, toolOfBlock: new Map(), jsonBlocks: new Set(), usage: {} },
    decodeEvent,
    () => ({
      type: "error",
      error: upstreamStreamError("upstream", "stream_truncated", "The upstream stream ended before message_stop."),
    }),
  );

type OpenBlock = { kind: "text" } | { kind: "thinking" } | { kind: "tool"; tool: number };

interface EncodeState {
  started: boolean;
  closed: boolean;
  /** Index of the last block opened; -1 before the first. */
  blockIndex: number;
  open: OpenBlock | null;
  usage: Usage;
  finish: FinishReason;
  stopSequence: string | null;
}

export function createAnthropicStreamEncoder(ctx: ClientResponseContext): StreamEncoder {
  const s: EncodeState = {
    started: false,
    closed: false,
    blockIndex: -1,
    open: null,
    usage: emptyUsage(),
    finish: "stop",
    stopSequence: null,
  };
  const emit = (data: Json): string => encodeSse(JSON.stringify(data), data.type as string);
  const start = (id: string, usage: Usage | undefined): string => {
    s.started = true;
    if (usage) s.usage = usage;
    return emit({
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // The input as far as the upstream has told it (exact behind Anthropic and Gemini, 0 behind OpenAI, which
        // reports usage only at the end), and no output: nothing has been delivered yet. Clients that add up
        // message_start and message_delta (LangChain) would otherwise count a running output total twice.
        usage: { ...anthropicUsage(s.usage), output_tokens: 0 },
      },
    });
  };
  // The SDK throws unless message_start comes first, whatever the upstream sent first.
  const ensure = (): string => (s.started ? "" : start(`msg_${ctx.requestId}`, undefined));
  const close = (): string => {
    if (!s.open) return "";
    s.open = null;
    return emit({ type: "content_block_stop", index: s.blockIndex });
  };
  const openBlock = (block: OpenBlock, contentBlock: Json): string => {
    const out = close();
    s.open = block;
    s.blockIndex++;
    return out + emit({ type: "content_block_start", index: s.blockIndex, content_block: contentBlock });
  };
  const delta = (d: Json): string => emit({ type: "content_block_delta", index: s.blockIndex, delta: d });

  return {
    encode(ev) {
      if (s.closed) return "";
      switch (ev.type) {
        case "start":
          return s.started ? "" : start(ev.id || `msg_${ctx.requestId}`, ev.usage);
        case "text": {
          const head =
            ensure() + (s.open?.kind === "text" ? "" : openBlock({ kind: "text" }, { type: "text", text: "" }));
          return head + delta({ type: "text_delta", text: ev.text });
        }
        case "thinking": {
          const head =
            ensure() +
            (s.open?.kind === "thinking"
              ? ""
              : openBlock({ kind: "thinking" }, { type: "thinking", thinking: "", signature: "" }));
          return head + delta({ type: "thinking_delta", thinking: ev.text });
        }
        case "thinking_signature":
          return s.open?.kind === "thinking" ? delta({ type: "signature_delta", signature: ev.signature }) : "";
        case "tool_call_start":
          return (
            ensure() +
            openBlock({ kind: "tool", tool: ev.index }, { type: "tool_use", id: ev.id, name: ev.name, input: {} })
          );
        case "tool_call_delta":
          // A block cannot be reopened: fragments for a call whose block is closed cannot be placed.
          if (s.open?.kind !== "tool" || s.open.tool !== ev.index) return "";
          return delta({ type: "input_json_delta", partial_json: ev.arguments });
        case "usage":
          s.usage = ev.usage;
          return "";
        case "finish":
          s.finish = ev.reason;
          s.stopSequence = ev.stopSequence ?? null;
          return "";
        case "error":
          s.closed = true;
          return encodeSse(
            JSON.stringify(anthropicErrorPayload(ev.error.kind, ev.error.message, ctx.requestId)),
            "error",
          );
        case "end":
          s.closed = true;
          return (
            ensure() +
            close() +
            emit({
              type: "message_delta",
              delta: { stop_reason: anthropicStopReason(s.finish, s.stopSequence), stop_sequence: s.stopSequence },
              usage: anthropicUsage(s.usage),
            }) +
            emit({ type: "message_stop" })
          );
      }
    },
  };
}
