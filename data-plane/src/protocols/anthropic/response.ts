// Anthropic Messages responses: upstream JSON → canonical, canonical → client JSON.

import { type AssistantPart, type CanonicalResponse, type FinishReason, type Usage, emptyUsage } from "../canonical.ts";
import { type Json, arr, nowSeconds, count, obj, str } from "../shared.ts";
import type { ClientResponseContext } from "../types.ts";

export const finishOfAnthropic = (reason: unknown): FinishReason => {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default: // end_turn, stop_sequence, pause_turn
      return "stop";
  }
};

export const anthropicStopReason = (reason: FinishReason, stopSequence: string | null | undefined): string => {
  switch (reason) {
    case "length":
      return "max_tokens";
    case "tool_calls":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default:
      return stopSequence ? "stop_sequence" : "end_turn";
  }
};

/**
 * Anthropic's input_tokens excludes cache reads and writes; canonical promptTokens includes them. Cache writes
 * are split by lifetime in cache_creation.ephemeral_5m/1h_input_tokens; a total without the split (older API
 * versions) is all 5-minute writes, the default lifetime, and a total larger than the split puts the rest there
 * too, so no written token is lost or counted twice.
 */
export function usageOfAnthropic(u: unknown): Usage {
  // No usage reads as zeros; a malformed report has NaN counts (see count), and Math.max keeps a NaN.
  if (u === undefined || u === null) return emptyUsage();
  const o = obj(u);
  const cacheRead = count(o.cache_read_input_tokens);
  const split = obj(o.cache_creation);
  const write1h = count(split.ephemeral_1h_input_tokens);
  const write5m = Math.max(count(split.ephemeral_5m_input_tokens), count(o.cache_creation_input_tokens) - write1h);
  const usage: Usage = {
    promptTokens: count(o.input_tokens, true) + cacheRead + write5m + write1h,
    completionTokens: count(o.output_tokens, true),
    reasoningTokens: 0, // Anthropic does not report thinking tokens apart from output_tokens
    cachedTokens: cacheRead,
  };
  if (write5m > 0) usage.cacheWrite5mTokens = write5m;
  if (write1h > 0) usage.cacheWrite1hTokens = write1h;
  return usage;
}

/** Never counts cached tokens twice: input_tokens = prompt − cache reads − cache writes. */
export function anthropicUsage(u: Usage): Json {
  const write5m = u.cacheWrite5mTokens ?? 0;
  const write1h = u.cacheWrite1hTokens ?? 0;
  return {
    input_tokens: Math.max(0, u.promptTokens - u.cachedTokens - write5m - write1h),
    cache_creation_input_tokens: write5m + write1h,
    cache_read_input_tokens: u.cachedTokens,
    cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h },
    output_tokens: u.completionTokens,
  };
}

/**
 * The tool a JSON-object answer (OpenAI json_object, Gemini JSON without a schema) is forced through toward
 * Anthropic: its input is the answer, an object by construction, and it comes back as the answer's text.
 * Anthropic's structured outputs take no schema-less object ({"type":"object"} needs its properties listed).
 */
export const JSON_ANSWER_TOOL = "modelgate_json_answer";

export function parseAnthropicResponse(body: unknown): CanonicalResponse {
  const b = obj(body);
  const content: AssistantPart[] = [];
  let jsonAnswer = false;
  for (const raw of arr(b.content)) {
    const block = obj(raw);
    if (block.type === "tool_use" && block.name === JSON_ANSWER_TOOL) {
      jsonAnswer = true;
      content.push({ type: "text", text: JSON.stringify(block.input ?? {}) });
    } else if (block.type === "text") content.push({ type: "text", text: str(block.text) ?? "" });
    else if (block.type === "thinking") {
      const signature = str(block.signature);
      const text = str(block.thinking) ?? "";
      content.push(signature ? { type: "thinking", text, signature } : { type: "thinking", text });
    } else if (block.type === "tool_use") {
      content.push({
        type: "tool_call",
        id: str(block.id) ?? "",
        name: str(block.name) ?? "",
        arguments: JSON.stringify(block.input ?? {}),
      });
    }
  }
  return {
    id: str(b.id) ?? "",
    model: str(b.model) ?? "",
    created: nowSeconds(),
    content,
    // The forced JSON tool's call is the answer, not a call for the client to make.
    finishReason:
      jsonAnswer && b.stop_reason === "tool_use" && !content.some((p) => p.type === "tool_call")
        ? "stop"
        : finishOfAnthropic(b.stop_reason),
    stopSequence: str(b.stop_sequence) ?? null,
    usage: usageOfAnthropic(b.usage),
  };
}

export function anthropicBlocks(parts: readonly AssistantPart[]): Json[] {
  return parts.map((p) => {
    if (p.type === "text") return { type: "text", text: p.text };
    // Anthropic's SDK types a thinking block's signature as a string: other vendors' reasoning gets "".
    if (p.type === "thinking") return { type: "thinking", thinking: p.text, signature: p.signature ?? "" };
    let input: unknown;
    try {
      input = JSON.parse(p.arguments === "" ? "{}" : p.arguments);
    } catch {
      input = {};
    }
    return { type: "tool_use", id: p.id, name: p.name, input };
  });
}

export function renderAnthropicResponse(res: CanonicalResponse, ctx: ClientResponseContext): Json {
  return {
    id: res.id,
    type: "message",
    role: "assistant",
    model: ctx.model,
    content: anthropicBlocks(res.content),
    stop_reason: anthropicStopReason(res.finishReason, res.stopSequence),
    stop_sequence: res.stopSequence ?? null,
    usage: anthropicUsage(res.usage),
  };
}
