// OpenAI Responses API streams: typed SSE events (`event: response.output_text.delta` …, each with a
// sequence_number), canonical events → client frames and upstream frames → canonical events.

import { namespacesOf } from "./request.ts";
import { GatewayError, withRequestId } from "../../errors.ts";
import type { CanonicalStreamEvent, FinishReason, Usage } from "../canonical.ts";
import type { SseEvent } from "../sse.ts";
import { sseStreamDecoder } from "../sse-decoder.ts";
import { type Json, kindOfErrorName, nowSeconds, obj, str, upstreamStreamError } from "../shared.ts";
import type { ClientResponseContext, StreamDecoder, StreamEncoder } from "../types.ts";
import { errorCodeOf } from "./errors.ts";
import {
  finishOfResponses,
  functionCallItem,
  idCore,
  messageItem,
  reasoningItem,
  responseIdOf,
  responseShell,
  responsesUsage,
  statusOf,
  usageOfResponses,
} from "./response.ts";

interface OpenItem {
  index: number;
  id: string;
  text: string;
}

interface OpenCall extends OpenItem {
  callId: string;
  name: string;
  namespace?: string;
}

export function createResponsesStreamEncoder(ctx: ClientResponseContext): StreamEncoder {
  const core = idCore(ctx.requestId);
  const namespaces = namespacesOf(ctx.request);
  const id = responseIdOf(ctx.requestId);
  let seq = 0;
  let createdAt = nowSeconds();
  let started = false;
  let closed = false;
  let usage: Usage | null = null;
  let finish: FinishReason = "stop";
  const items: Json[] = [];
  let message: OpenItem | null = null;
  let reasoning: (OpenItem & { signature?: string; summaryOpen: boolean }) | null = null;
  const calls = new Map<number, OpenCall>();
  let held: Json | null = null;

  const frame = (type: string, payload: Json): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...payload, sequence_number: seq++ })}\n\n`;
  const snapshot = (status: string): Json => ({ ...responseShell(ctx, id, createdAt, status), output: items.slice() });
  const ensure = (): string => {
    if (started) return "";
    started = true;
    return (
      frame("response.created", { response: snapshot("in_progress") }) +
      frame("response.in_progress", { response: snapshot("in_progress") })
    );
  };
  const itemId = (prefix: string) => `${prefix}_${core}_${items.length}`;
  const closeMessage = (): string => {
    if (!message) return "";
    const m = message;
    message = null;
    const at = { item_id: m.id, output_index: m.index, content_index: 0 };
    const done = messageItem(m.id, m.text);
    items[m.index] = done;
    return (
      frame("response.output_text.done", { ...at, text: m.text, logprobs: [] }) +
      frame("response.content_part.done", {
        ...at,
        part: { type: "output_text", text: m.text, annotations: [], logprobs: [] },
      }) +
      frame("response.output_item.done", { output_index: m.index, item: done })
    );
  };
  const closeReasoning = (): string => {
    if (!reasoning) return "";
    const r = reasoning;
    reasoning = null;
    let out = "";
    const at = { item_id: r.id, output_index: r.index, summary_index: 0 };
    if (r.summaryOpen) {
      out += frame("response.reasoning_summary_text.done", { ...at, text: r.text });
      out += frame("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text: r.text } });
    }
    const done = reasoningItem(r.id, r.text, r.signature);
    items[r.index] = done;
    return out + frame("response.output_item.done", { output_index: r.index, item: done });
  };
  const doneCall = (c: OpenCall): string => {
    const done = functionCallItem(c.id, c.callId, c.name, c.text, "completed", c.namespace);
    items[c.index] = done;
    return (
      frame("response.function_call_arguments.done", {
        item_id: c.id,
        output_index: c.index,
        name: c.name,
        arguments: c.text,
      }) + frame("response.output_item.done", { output_index: c.index, item: done })
    );
  };
  /** Closes the call open under a canonical tool index (a new call reusing the index ends the old one). */
  const closeCall = (index: number): string => {
    const c = calls.get(index);
    if (!c) return "";
    calls.delete(index);
    return doneCall(c);
  };
  const closeCalls = (): string => {
    let out = "";
    for (const c of calls.values()) out += doneCall(c);
    calls.clear();
    return out;
  };
  const closeAll = () => closeMessage() + closeReasoning() + closeCalls();
  const openReasoning = (): string => {
    if (reasoning) return "";
    const out = closeMessage() + closeCalls();
    reasoning = { index: items.length, id: itemId("rs"), text: "", summaryOpen: false };
    items.push(reasoningItem(reasoning.id, ""));
    return (
      out +
      frame("response.output_item.added", { output_index: reasoning.index, item: reasoningItem(reasoning.id, "") })
    );
  };

  return {
    encode(ev) {
      if (closed) return "";
      switch (ev.type) {
        case "start":
          if (!started && ev.created) createdAt = ev.created;
          if (ev.usage) usage = ev.usage;
          return ensure();
        case "text": {
          let out = ensure();
          if (!message) {
            out += closeReasoning() + closeCalls();
            message = { index: items.length, id: itemId("msg"), text: "" };
            items.push(messageItem(message.id, "", "in_progress"));
            out += frame("response.output_item.added", {
              output_index: message.index,
              item: { ...messageItem(message.id, "", "in_progress"), content: [] },
            });
            out += frame("response.content_part.added", {
              item_id: message.id,
              output_index: message.index,
              content_index: 0,
              part: { type: "output_text", text: "", annotations: [], logprobs: [] },
            });
          }
          message.text += ev.text;
          return (
            out +
            frame("response.output_text.delta", {
              item_id: message.id,
              output_index: message.index,
              content_index: 0,
              delta: ev.text,
              logprobs: [],
            })
          );
        }
        case "thinking": {
          let out = ensure() + openReasoning();
          const r = reasoning!;
          const at = { item_id: r.id, output_index: r.index, summary_index: 0 };
          if (!r.summaryOpen) {
            r.summaryOpen = true;
            out += frame("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } });
          }
          r.text += ev.text;
          return out + frame("response.reasoning_summary_text.delta", { ...at, delta: ev.text });
        }
        case "thinking_signature": {
          const out = ensure() + openReasoning();
          reasoning!.signature = (reasoning!.signature ?? "") + ev.signature;
          return out;
        }
        case "tool_call_start": {
          // Other calls stay open: an upstream may interleave the argument deltas of parallel calls (each
          // delta names its call by index), and each goes to its own item by output_index and item id.
          let out = ensure() + closeMessage() + closeReasoning() + closeCall(ev.index);
          if (ev.signature) {
            // The call's signature as a reasoning item right before it (see outputItems in response.ts).
            const rs = reasoningItem(itemId("rs"), "", ev.signature);
            const index = items.length;
            items.push(rs);
            out +=
              frame("response.output_item.added", { output_index: index, item: rs }) +
              frame("response.output_item.done", { output_index: index, item: rs });
          }
          const ns = namespaces.get(ev.name);
          const c: OpenCall = {
            index: items.length,
            id: itemId("fc"),
            text: "",
            callId: ev.id,
            name: ns?.name ?? ev.name,
          };
          if (ns) c.namespace = ns.namespace;
          calls.set(ev.index, c);
          const item = functionCallItem(c.id, c.callId, c.name, "", "in_progress", c.namespace);
          items.push(item);
          out += frame("response.output_item.added", { output_index: c.index, item });
          return out;
        }
        case "tool_call_delta": {
          const c = calls.get(ev.index);
          if (!c) return "";
          c.text += ev.arguments;
          return frame("response.function_call_arguments.delta", {
            item_id: c.id,
            output_index: c.index,
            delta: ev.arguments,
          });
        }
        case "usage":
          usage = ev.usage;
          return "";
        case "finish":
          finish = ev.reason;
          return "";
        case "error": {
          closed = true;
          const out = ensure();
          const message = withRequestId(ev.error.message, ctx.requestId);
          const failed = snapshot("failed");
          failed.error = { code: errorCodeOf(ev.error), message };
          if (usage) failed.usage = responsesUsage(usage);
          return (
            out +
            frame("error", { code: ev.error.code, message, param: ev.error.param }) +
            frame("response.failed", { response: failed })
          );
        }
        case "end": {
          closed = true;
          const out = ensure() + closeAll();
          const { status, incomplete } = statusOf(finish);
          const final = snapshot(status);
          final.incomplete_details = incomplete;
          final.usage = usage ? responsesUsage(usage) : null;
          held = final;
          return out;
        }
      }
    },
    // response.completed goes out only once the response is kept (when the client asked for that), so the
    // next call, on any replica, finds it.
    async close() {
      if (!held) return "";
      const final = held;
      held = null;
      try {
        await ctx.commit?.(final);
      } catch {
        // Not kept: the client is not told it is complete, since a continuation of it would not be found.
        const message = withRequestId("The response could not be stored; send the request again.", ctx.requestId);
        return (
          frame("error", { code: "store_unavailable", message, param: null }) +
          frame("response.failed", {
            response: { ...final, status: "failed", error: { code: "server_error", message } },
          })
        );
      }
      return frame(
        final.status === "completed"
          ? "response.completed"
          : final.status === "failed"
            ? "response.failed"
            : "response.incomplete",
        { response: final },
      );
    },
  };
}

// ---- upstream Responses stream → canonical events ----

interface DecodeState {
  started: boolean;
  finished: boolean;
  closed: boolean;
  /**
   * upstream call → canonical tool index, and whether its arguments came as deltas; keyed by item id and by
   * output index (`#3`), so an event that names its call either way finds it, interleaved with other calls
   */
  calls: Map<string, { index: number; streamed: boolean }>;
  /** canonical tool indexes handed out */
  callCount: number;
}

/** The call an event names, by its item id or else its output index. */
const callOf = (s: DecodeState, itemId: unknown, outputIndex: unknown) =>
  (typeof itemId === "string" ? s.calls.get(itemId) : undefined) ??
  (typeof outputIndex === "number" ? s.calls.get(`#${outputIndex}`) : undefined);

function decodeEvent(ev: SseEvent, s: DecodeState, out: CanonicalStreamEvent[]): void {
  if (s.closed) return;
  let data: Json;
  try {
    data = obj(JSON.parse(ev.data));
  } catch {
    if (ev.data === "[DONE]") return;
    s.closed = true;
    out.push({
      type: "error",
      error: upstreamStreamError("upstream", "malformed_stream", "The upstream sent a malformed stream event."),
    });
    return;
  }
  const type = str(data.type) ?? ev.event;
  switch (type) {
    case "response.created": {
      const r = obj(data.response);
      s.started = true;
      out.push({
        type: "start",
        id: str(r.id) ?? "",
        model: str(r.model) ?? "",
        created: typeof r.created_at === "number" ? r.created_at : nowSeconds(),
      });
      return;
    }
    case "response.output_item.added": {
      const item = obj(data.item);
      if (item.type !== "function_call") return;
      const index = s.callCount++;
      const call = { index, streamed: false };
      if (str(item.id)) s.calls.set(str(item.id)!, call);
      if (typeof data.output_index === "number") s.calls.set(`#${data.output_index}`, call);
      out.push({
        type: "tool_call_start",
        index,
        id: str(item.call_id) ?? str(item.id) ?? `call_${index}`,
        name: str(item.name) ?? "",
      });
      return;
    }
    case "response.function_call_arguments.delta": {
      const call = callOf(s, data.item_id, data.output_index);
      const delta = str(data.delta) ?? "";
      if (call && delta !== "") {
        call.streamed = true;
        out.push({ type: "tool_call_delta", index: call.index, arguments: delta });
      }
      return;
    }
    case "response.output_text.delta":
    case "response.refusal.delta": {
      const delta = str(data.delta);
      if (delta) out.push({ type: "text", text: delta });
      return;
    }
    case "response.reasoning_summary_text.delta":
    case "response.reasoning_text.delta": {
      const delta = str(data.delta);
      if (delta) out.push({ type: "thinking", text: delta });
      return;
    }
    case "response.output_item.done": {
      const item = obj(data.item);
      if (item.type === "function_call") {
        // Some servers send a call's arguments only with the finished item.
        const call = callOf(s, item.id, data.output_index);
        const args = str(item.arguments) ?? "";
        if (call && !call.streamed && args !== "")
          out.push({ type: "tool_call_delta", index: call.index, arguments: args });
      } else if (item.type === "reasoning" && str(item.encrypted_content)) {
        out.push({ type: "thinking_signature", signature: str(item.encrypted_content)! });
      }
      return;
    }
    case "response.completed":
    case "response.incomplete": {
      const r = obj(data.response);
      s.finished = true;
      s.closed = true;
      if (r.usage != null) out.push({ type: "usage", usage: usageOfResponses(r.usage) });
      out.push({
        type: "finish",
        reason: finishOfResponses(
          r.status ?? (type === "response.completed" ? "completed" : "incomplete"),
          r.incomplete_details,
          s.callCount > 0,
        ),
      });
      out.push({ type: "end" });
      return;
    }
    case "response.failed": {
      const e = obj(obj(data.response).error);
      s.closed = true;
      const code = str(e.code);
      out.push({
        type: "error",
        error: new GatewayError(
          kindOfErrorName(code),
          code ?? "upstream_error",
          str(e.message) ?? "The upstream failed to answer.",
        ),
      });
      return;
    }
    case "error": {
      s.closed = true;
      const e = data.error !== undefined ? obj(data.error) : data;
      const code = str(e.code) ?? str(e.type);
      out.push({
        type: "error",
        error: new GatewayError(
          kindOfErrorName(code),
          code ?? "upstream_error",
          str(e.message) ?? "Upstream stream error.",
        ),
      });
      return;
    }
  }
}

export const createResponsesStreamDecoder = (): StreamDecoder =>
  sseStreamDecoder<DecodeState>(
    { started: false, finished: false, closed: false, calls: new Map(), callCount: 0 },
    decodeEvent,
    () => ({
      type: "error",
      error: upstreamStreamError(
        "upstream",
        "stream_truncated",
        "The upstream stream ended before the answer was complete.",
      ),
    }),
  );
