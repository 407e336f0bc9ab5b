// Bedrock Converse answers → canonical: the output message's content blocks, its stopReason, and its usage.

import { randomUUID } from "node:crypto";
import { type AssistantPart, type CanonicalResponse, type FinishReason, type Usage, emptyUsage } from "../canonical.ts";
import { arr, count, nowSeconds, obj, str } from "../shared.ts";

export const finishOfConverse = (reason: unknown): FinishReason => {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter";
    default: // end_turn, stop_sequence
      return "stop";
  }
};

/**
 * Converse's usage: inputTokens excludes the tokens read from or written to the prompt cache (they are counted
 * apart, as Anthropic counts them), so the canonical prompt is all three. Cache writes are split by lifetime in
 * cacheDetails (1h and 5m); a total without the split is all 5-minute writes (the default lifetime), and a
 * total larger than the split puts the rest there too.
 */
export function usageOfConverse(u: unknown): Usage {
  if (u === undefined || u === null) return emptyUsage();
  const o = obj(u);
  const cacheRead = count(o.cacheReadInputTokens);
  let split5m = 0;
  let write1h = 0;
  for (const d of arr(o.cacheDetails)) {
    const detail = obj(d);
    if (detail.ttl === "1h") write1h += count(detail.inputTokens);
    else split5m += count(detail.inputTokens);
  }
  const write5m = Math.max(split5m, count(o.cacheWriteInputTokens) - write1h);
  const usage: Usage = {
    promptTokens: count(o.inputTokens, true) + cacheRead + write5m + write1h,
    completionTokens: count(o.outputTokens, true),
    reasoningTokens: 0, // Converse does not report reasoning apart from outputTokens
    cachedTokens: cacheRead,
  };
  if (write5m > 0) usage.cacheWrite5mTokens = write5m;
  if (write1h > 0) usage.cacheWrite1hTokens = write1h;
  return usage;
}

/** Converse answers carry no id of their own: one is made, as a client expects one. */
export const converseId = (): string => `msg_bdrk_${randomUUID().replace(/-/g, "")}`;

export function parseConverseResponse(body: unknown): CanonicalResponse {
  const b = obj(body);
  const content: AssistantPart[] = [];
  for (const raw of arr(obj(obj(b.output).message).content)) {
    const block = obj(raw);
    if (typeof block.text === "string") content.push({ type: "text", text: block.text });
    else if (block.toolUse !== undefined) {
      const t = obj(block.toolUse);
      content.push({
        type: "tool_call",
        id: str(t.toolUseId) ?? "",
        name: str(t.name) ?? "",
        arguments: JSON.stringify(t.input ?? {}),
      });
    } else if (block.reasoningContent !== undefined) {
      const r = obj(obj(block.reasoningContent).reasoningText);
      // redactedContent (encrypted reasoning) has no text any client protocol can carry.
      if (typeof r.text !== "string") continue;
      const signature = str(r.signature);
      content.push(signature ? { type: "thinking", text: r.text, signature } : { type: "thinking", text: r.text });
    }
  }
  return {
    id: converseId(),
    model: "",
    created: nowSeconds(),
    content,
    finishReason: finishOfConverse(b.stopReason),
    stopSequence: null,
    usage: usageOfConverse(b.usage),
  };
}
