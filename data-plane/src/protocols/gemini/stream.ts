// Gemini streams (alt=sse): upstream `data:` events, each a whole GenerateContentResponse → canonical events;
// canonical events → client `data: {...}\r\n\r\n` events in Google's framing.

import { GatewayError } from "../../errors.ts";
import type { CanonicalStreamEvent, FinishReason, Usage } from "../canonical.ts";
import type { SseEvent } from "../sse.ts";
import { sseStreamDecoder } from "../sse-decoder.ts";
import {
  type Json,
  arr,
  kindOfErrorName,
  kindOfStatus,
  nowSeconds,
  num,
  obj,
  parseArgumentsLenient,
  str,
  upstreamStreamError,
} from "../shared.ts";
import type { ClientResponseContext, StreamDecoder, StreamEncoder } from "../types.ts";
import { geminiErrorPayload } from "./errors.ts";
import { geminiCallId } from "./parts.ts";
import { finishOfGemini, geminiFinish, geminiUsage, usageOfGemini } from "./response.ts";

interface DecodeState {
  started: boolean;
  finished: boolean;
  closed: boolean;
  /** Function calls seen so far: the next call's index, and what makes STOP mean tool_calls. */
  tools: number;
}

function decodeEvent(ev: SseEvent, s: DecodeState, out: CanonicalStreamEvent[]): void {
  if (s.closed) return;
  let chunk: Json;
  try {
    chunk = obj(JSON.parse(ev.data));
  } catch {
    s.closed = true;
    out.push({
      type: "error",
      error: upstreamStreamError("upstream", "malformed_stream", "The upstream sent a malformed stream event."),
    });
    return;
  }
  if (chunk.error !== undefined) {
    const e = obj(chunk.error);
    s.closed = true;
    const status = str(e.status);
    const kind = num(e.code) ? kindOfStatus(num(e.code)) : kindOfErrorName(status);
    out.push({
      type: "error",
      error: new GatewayError(kind, status ?? "upstream_error", str(e.message) ?? "Upstream stream error."),
    });
    return;
  }
  const usage = chunk.usageMetadata === undefined ? undefined : usageOfGemini(chunk.usageMetadata);
  if (!s.started) {
    s.started = true;
    const start: CanonicalStreamEvent = {
      type: "start",
      id: str(chunk.responseId) ?? "",
      model: str(chunk.modelVersion) ?? "",
      created: nowSeconds(),
    };
    if (usage) start.usage = usage;
    out.push(start);
  }
  const cand = obj(arr(chunk.candidates)[0]);
  for (const raw of arr(obj(cand.content).parts)) {
    const p = obj(raw);
    if (p.functionCall !== undefined) {
      const fc = obj(p.functionCall);
      const name = str(fc.name) ?? "";
      const index = s.tools++;
      const startCall: CanonicalStreamEvent = {
        type: "tool_call_start",
        index,
        id: str(fc.id) ?? geminiCallId(name, index),
        name,
      };
      const sig = str(p.thoughtSignature);
      if (sig) startCall.signature = sig;
      // Gemini sends a call whole; it becomes one fragment carrying all the arguments.
      out.push(startCall, { type: "tool_call_delta", index, arguments: JSON.stringify(fc.args ?? {}) });
    } else if (typeof p.text === "string") {
      if (p.thought === true) {
        if (p.text !== "") out.push({ type: "thinking", text: p.text });
        const sig = str(p.thoughtSignature);
        if (sig) out.push({ type: "thinking_signature", signature: sig });
      } else if (p.text !== "") out.push({ type: "text", text: p.text });
    }
  }
  if (usage) out.push({ type: "usage", usage });
  const blocked = chunk.candidates === undefined && str(obj(chunk.promptFeedback).blockReason) !== undefined;
  if (!s.finished && (cand.finishReason != null || blocked)) {
    s.finished = true;
    out.push({ type: "finish", reason: blocked ? "content_filter" : finishOfGemini(cand.finishReason, s.tools > 0) });
  }
}

// Gemini has no end marker: the stream is complete when the body ends after a finish reason.
export const createGeminiStreamDecoder = (): StreamDecoder =>
  sseStreamDecoder<DecodeState>({ started: false, finished: false, closed: false, tools: 0 }, decodeEvent, (state) =>
    state.finished
      ? { type: "end" }
      : {
          type: "error",
          error: upstreamStreamError(
            "upstream",
            "stream_truncated",
            "The upstream stream ended without a finish reason.",
          ),
        },
  );

interface PendingCall {
  name: string;
  args: string;
  signature?: string;
}

interface EncodeState {
  closed: boolean;
  id: string;
  usage: Usage | null;
  finish: FinishReason;
  /** Gemini sends each function call whole, so argument fragments are collected until the call is complete. */
  calls: Map<number, PendingCall>;
}

export function createGeminiStreamEncoder(ctx: ClientResponseContext): StreamEncoder {
  const s: EncodeState = { closed: false, id: ctx.requestId, usage: null, finish: "stop", calls: new Map() };
  const frame = (parts: Json[], finish?: FinishReason): string => {
    const cand: Json = { content: { role: "model", parts } };
    if (finish !== undefined) cand.finishReason = geminiFinish(finish);
    cand.index = 0;
    const body: Json = { candidates: [cand] };
    // Google repeats the cumulative usage on every chunk once it is known.
    if (s.usage) body.usageMetadata = geminiUsage(s.usage);
    body.modelVersion = ctx.model;
    body.responseId = s.id;
    return `data: ${JSON.stringify(body)}\r\n\r\n`;
  };
  const callParts = (): Json[] => {
    const parts: Json[] = [];
    for (const c of s.calls.values()) {
      const part: Json = { functionCall: { name: c.name, args: parseArgumentsLenient(c.args) } };
      if (c.signature) part.thoughtSignature = c.signature;
      parts.push(part);
    }
    s.calls.clear();
    return parts;
  };
  // Text after a call must not overtake it: complete calls are written before the next part.
  const flushCalls = (): string => (s.calls.size === 0 ? "" : frame(callParts()));

  return {
    encode(ev) {
      if (s.closed) return "";
      switch (ev.type) {
        case "start":
          if (ev.id) s.id = ev.id;
          if (ev.usage) s.usage = ev.usage;
          return "";
        case "text":
          return flushCalls() + frame([{ text: ev.text }]);
        case "thinking":
          return flushCalls() + frame([{ text: ev.text, thought: true }]);
        case "thinking_signature":
          return flushCalls() + frame([{ text: "", thought: true, thoughtSignature: ev.signature }]);
        case "tool_call_start": {
          const call: PendingCall = { name: ev.name, args: "" };
          if (ev.signature) call.signature = ev.signature;
          s.calls.set(ev.index, call);
          return "";
        }
        case "tool_call_delta": {
          const call = s.calls.get(ev.index);
          if (call) call.args += ev.arguments;
          return "";
        }
        case "usage":
          s.usage = ev.usage;
          return "";
        case "finish":
          s.finish = ev.reason;
          return "";
        case "error":
          s.closed = true;
          return `data: ${JSON.stringify(geminiErrorPayload(ev.error.status, ev.error.kind, ev.error.message, ctx.requestId))}\r\n\r\n`;
        case "end":
          s.closed = true;
          // The last chunk carries the finish reason and the final usage, possibly with no parts.
          return frame(callParts(), s.finish);
      }
    },
  };
}
