// OpenAI Chat Completions responses: upstream JSON → canonical, canonical → client JSON.

import { type AssistantPart, type CanonicalResponse, type FinishReason, type Usage, emptyUsage } from "../canonical.ts";
import { type Json, nowSeconds, count, obj, str } from "../shared.ts";
import type { ClientResponseContext } from "../types.ts";

export const finishOfOpenAI = (reason: unknown): FinishReason => {
  switch (reason) {
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    default:
      return "stop";
  }
};

/** OpenAI has no "error" finish reason; the answer did end, so it is reported as a plain stop. */
export const openAIFinish = (reason: FinishReason): string => (reason === "error" ? "stop" : reason);

/** No usage (absent or null) reads as zeros; a report that is there but malformed has NaN counts (see count). */
export function usageOfOpenAI(u: unknown): Usage {
  if (u === undefined || u === null) return emptyUsage();
  const o = obj(u);
  return {
    promptTokens: count(o.prompt_tokens, true),
    completionTokens: count(o.completion_tokens, true),
    reasoningTokens: count(obj(o.completion_tokens_details).reasoning_tokens),
    cachedTokens: count(cachedOf(o)),
  };
}

/**
 * Cache reads, part of prompt_tokens: OpenAI's `prompt_tokens_details.cached_tokens`, DeepSeek's
 * `prompt_cache_hit_tokens` (beside `prompt_cache_miss_tokens`, the two summing to prompt_tokens), Moonshot's
 * top-level `cached_tokens`.
 */
function cachedOf(o: Record<string, unknown>): unknown {
  const details = obj(o.prompt_tokens_details).cached_tokens;
  if (details !== undefined && details !== null) return details;
  return o.prompt_cache_hit_tokens ?? o.cached_tokens;
}

/** Where a stream chunk carries its usage: `usage`, or Groq's `x_groq.usage` in its last chunk. */
export const chunkUsage = (chunk: { usage?: unknown; x_groq?: unknown }): unknown =>
  chunk.usage ??
  (chunk.x_groq !== null && typeof chunk.x_groq === "object" ? (chunk.x_groq as { usage?: unknown }).usage : undefined);

export const openAIUsage = (u: Usage): Json => ({
  prompt_tokens: u.promptTokens,
  completion_tokens: u.completionTokens,
  total_tokens: u.promptTokens + u.completionTokens,
  prompt_tokens_details: { cached_tokens: u.cachedTokens },
  completion_tokens_details: { reasoning_tokens: u.reasoningTokens },
});

export function parseOpenAIResponse(body: unknown): CanonicalResponse {
  const b = obj(body);
  const choice = obj(Array.isArray(b.choices) ? b.choices[0] : undefined);
  const msg = obj(choice.message);
  const content: AssistantPart[] = [];
  // DeepSeek and vLLM call it reasoning_content, OpenRouter and others reasoning.
  const thinking = str(msg.reasoning_content) ?? str(msg.reasoning);
  if (thinking) content.push({ type: "thinking", text: thinking });
  const text = str(msg.content) ?? str(msg.refusal);
  if (text) content.push({ type: "text", text });
  if (Array.isArray(msg.tool_calls)) {
    for (const tc of msg.tool_calls) {
      const t = obj(tc);
      const fn = obj(t.function);
      content.push({
        type: "tool_call",
        id: str(t.id) ?? "",
        name: str(fn.name) ?? "",
        arguments: str(fn.arguments) ?? "",
      });
    }
  }
  return {
    id: str(b.id) ?? "",
    model: str(b.model) ?? "",
    created: typeof b.created === "number" ? b.created : nowSeconds(),
    content,
    finishReason: finishOfOpenAI(choice.finish_reason),
    usage: usageOfOpenAI(b.usage),
  };
}

/** The assistant message fields an OpenAI client sees; shared with the stream encoder's conventions. */
export function renderOpenAIResponse(res: CanonicalResponse, ctx: ClientResponseContext): Json {
  let text = "";
  let thinking = "";
  let hasText = false;
  const toolCalls: Json[] = [];
  for (const p of res.content) {
    if (p.type === "text") {
      text += p.text;
      hasText = true;
    } else if (p.type === "thinking") thinking += p.text;
    else toolCalls.push({ id: p.id, type: "function", function: { name: p.name, arguments: p.arguments } });
  }
  const message: Json = { role: "assistant", content: hasText || toolCalls.length === 0 ? text : null };
  // Where DeepSeek-style gateways put reasoning; the official SDK passes unknown fields through.
  if (thinking) message.reasoning_content = thinking;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  message.refusal = null;
  return {
    id: res.id,
    object: "chat.completion",
    created: res.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: openAIFinish(res.finishReason) }],
    usage: openAIUsage(res.usage),
  };
}
