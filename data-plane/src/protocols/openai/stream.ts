// OpenAI Chat Completions streams: upstream SSE → canonical events, canonical events → client SSE.

import type { CanonicalStreamEvent, FinishReason, Usage } from "../canonical.ts";
import { renderOpenAIError } from "./errors.ts";
import { GatewayError } from "../../errors.ts";
import type { SseEvent } from "../sse.ts";
import { sseStreamDecoder } from "../sse-decoder.ts";
import { type Json, arr, kindOfErrorName, nowSeconds, obj, str, upstreamStreamError } from "../shared.ts";
import type { ClientResponseContext, StreamDecoder, StreamEncoder } from "../types.ts";
import { chunkUsage, finishOfOpenAI, openAIFinish, openAIUsage, usageOfOpenAI } from "./response.ts";

interface DecodeState {
  started: boolean;
  finished: boolean;
  /** [DONE] seen, or an error reported: nothing more is emitted. */
  closed: boolean;
  /** Upstream tool_calls[].index → canonical index (the same unless the upstream skips indexes). */
  tools: Map<number, number>;
}

function decodeEvent(ev: SseEvent, s: DecodeState, out: CanonicalStreamEvent[]): void {
  if (s.closed) return;
  if (ev.data === "[DONE]") {
    s.closed = true;
    out.push({ type: "end" });
    return;
  }
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
    const name = str(e.code) ?? str(e.type);
    out.push({
      type: "error",
      error: new GatewayError(
        kindOfErrorName(name),
        name ?? "upstream_error",
        str(e.message) ?? "Upstream stream error.",
      ),
    });
    return;
  }
  // Azure OpenAI opens its streams with a chunk of prompt_filter_results and no choices (id, model and created
  // empty): there is nothing in it to relay, and the stream starts with the next chunk.
  if (!s.started && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage == null) return;
  if (!s.started) {
    s.started = true;
    out.push({
      type: "start",
      id: str(chunk.id) ?? "",
      model: str(chunk.model) ?? "",
      created: typeof chunk.created === "number" ? chunk.created : nowSeconds(),
    });
  }
  const choice = obj(arr(chunk.choices)[0]);
  const delta = obj(choice.delta);
  const thinking = str(delta.reasoning_content) ?? str(delta.reasoning);
  if (thinking) out.push({ type: "thinking", text: thinking });
  const text = str(delta.content);
  if (text) out.push({ type: "text", text });
  for (const raw of arr(delta.tool_calls)) {
    const tc = obj(raw);
    const fn = obj(tc.function);
    const upstreamIndex = typeof tc.index === "number" ? tc.index : 0;
    let index = s.tools.get(upstreamIndex);
    if (index === undefined) {
      index = s.tools.size;
      s.tools.set(upstreamIndex, index);
      out.push({ type: "tool_call_start", index, id: str(tc.id) ?? `call_${index}`, name: str(fn.name) ?? "" });
    }
    const args = str(fn.arguments);
    if (args) out.push({ type: "tool_call_delta", index, arguments: args });
  }
  if (choice.finish_reason != null && !s.finished) {
    s.finished = true;
    out.push({ type: "finish", reason: finishOfOpenAI(choice.finish_reason) });
  }
  const reported = chunkUsage(chunk);
  if (reported != null) out.push({ type: "usage", usage: usageOfOpenAI(reported) });
}

// Some OpenAI-compatible servers omit [DONE]; a stream that reached its finish reason is complete.
export const createOpenAIStreamDecoder = (): StreamDecoder =>
  sseStreamDecoder<DecodeState>(
    { started: false, finished: false, closed: false, tools: new Map() },
    decodeEvent,
    (state) =>
      state.finished
        ? { type: "end" }
        : {
            type: "error",
            error: upstreamStreamError(
              "upstream",
              "stream_truncated",
              "The upstream stream ended before the answer was complete.",
            ),
          },
  );

interface EncodeState {
  started: boolean;
  closed: boolean;
  finishSent: boolean;
  usage: Usage | null;
  /** JSON prefix shared by every chunk: `{"id":…,"object":…,"created":…,"model":…,` */
  prefix: string;
}

/**
 * Chunks are assembled from a precomputed prefix: the id/object/created/model fields are the same on every
 * chunk, so they are serialised once per stream.
 */
export function createOpenAIStreamEncoder(ctx: ClientResponseContext & { includeUsage?: boolean }): StreamEncoder {
  const includeUsage = ctx.includeUsage === true;
  const s: EncodeState = { started: false, closed: false, finishSent: false, usage: null, prefix: "" };
  const usageTail = includeUsage ? `,"usage":null}` : "}";
  const chunk = (delta: Json, finish: FinishReason | null = null): string =>
    `data: ${s.prefix}"choices":[{"index":0,"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":${finish === null ? "null" : JSON.stringify(openAIFinish(finish))}}]${usageTail}\n\n`;
  const start = (id: string, created: number): string => {
    s.started = true;
    s.prefix = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(ctx.model)},`;
    return chunk({ role: "assistant", content: "" });
  };
  const ensure = (): string => (s.started ? "" : start(`chatcmpl-${ctx.requestId}`, nowSeconds()));

  return {
    encode(ev) {
      if (s.closed) return "";
      switch (ev.type) {
        case "start":
          return s.started ? "" : start(ev.id || `chatcmpl-${ctx.requestId}`, ev.created);
        case "text":
          return ensure() + chunk({ content: ev.text });
        case "thinking":
          // DeepSeek's field name, which OpenAI-compatible clients already understand.
          return ensure() + chunk({ reasoning_content: ev.text });
        case "thinking_signature":
          return "";
        case "tool_call_start":
          return (
            ensure() +
            chunk({
              tool_calls: [
                { index: ev.index, id: ev.id, type: "function", function: { name: ev.name, arguments: "" } },
              ],
            })
          );
        case "tool_call_delta":
          return ensure() + chunk({ tool_calls: [{ index: ev.index, function: { arguments: ev.arguments } }] });
        case "usage":
          s.usage = ev.usage;
          return "";
        case "finish":
          if (s.finishSent) return "";
          s.finishSent = true;
          return ensure() + chunk({}, ev.reason);
        case "error": {
          s.closed = true;
          // The SDK throws on a data payload with an `error` key; [DONE] is not sent after it.
          return `data: ${renderOpenAIError(ev.error, ctx.requestId).body}\n\n`;
        }
        case "end": {
          s.closed = true;
          let out = ensure();
          if (!s.finishSent) out += chunk({}, "stop");
          if (includeUsage && s.usage)
            out += `data: ${s.prefix}"choices":[],"usage":${JSON.stringify(openAIUsage(s.usage))}}\n\n`;
          return out + "data: [DONE]\n\n";
        }
      }
    },
  };
}
