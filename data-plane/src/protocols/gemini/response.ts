// Gemini generateContent responses: upstream JSON → canonical, canonical → client JSON.

import { type AssistantPart, type CanonicalResponse, type FinishReason, type Usage, emptyUsage } from "../canonical.ts";
import { type Json, arr, nowSeconds, count, obj, str } from "../shared.ts";
import type { ClientResponseContext } from "../types.ts";
import { assistantPartsOfGemini, geminiPartsOfAssistant } from "./parts.ts";

const CONTENT_FILTER = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
]);

/** Gemini says STOP for a turn that ends in function calls; the caller knows whether it did. */
export function finishOfGemini(reason: unknown, hasToolCalls: boolean): FinishReason {
  if (reason === "STOP" || reason === undefined || reason === null) return hasToolCalls ? "tool_calls" : "stop";
  if (reason === "MAX_TOKENS") return "length";
  if (typeof reason === "string" && CONTENT_FILTER.has(reason)) return "content_filter";
  // MALFORMED_FUNCTION_CALL, OTHER, LANGUAGE, UNEXPECTED_TOOL_CALL, …: the answer did not finish normally.
  return "error";
}

export const geminiFinish = (reason: FinishReason): string =>
  reason === "length" ? "MAX_TOKENS" : reason === "content_filter" ? "SAFETY" : reason === "error" ? "OTHER" : "STOP";

/**
 * Gemini counts thoughts apart from candidates; canonical completion tokens include them. promptTokenCount
 * already includes cachedContentTokenCount (cache reads); the prompt of tool results (toolUsePromptTokenCount)
 * is counted apart and is input too.
 */
export function usageOfGemini(u: unknown): Usage {
  // No usage reads as zeros; a malformed report has NaN counts (see count). Google leaves out a
  // candidatesTokenCount of 0, never the prompt's.
  if (u === undefined || u === null) return emptyUsage();
  const o = obj(u);
  const thoughts = count(o.thoughtsTokenCount);
  return {
    promptTokens: count(o.promptTokenCount, true) + count(o.toolUsePromptTokenCount),
    completionTokens: count(o.candidatesTokenCount) + thoughts,
    reasoningTokens: thoughts,
    cachedTokens: count(o.cachedContentTokenCount),
  };
}

export function geminiUsage(u: Usage): Json {
  const out: Json = {
    promptTokenCount: u.promptTokens,
    candidatesTokenCount: Math.max(0, u.completionTokens - u.reasoningTokens),
    totalTokenCount: u.promptTokens + u.completionTokens,
  };
  if (u.reasoningTokens > 0) out.thoughtsTokenCount = u.reasoningTokens;
  if (u.cachedTokens > 0) out.cachedContentTokenCount = u.cachedTokens;
  return out;
}

export function parseGeminiResponse(body: unknown): CanonicalResponse {
  const b = obj(body);
  const cand = obj(arr(b.candidates)[0]);
  const content: AssistantPart[] = assistantPartsOfGemini(arr(obj(cand.content).parts));
  const hasCalls = content.some((p) => p.type === "tool_call");
  // A blocked prompt is a 200 with promptFeedback.blockReason and no candidate at all.
  const blocked = cand.finishReason === undefined && str(obj(b.promptFeedback).blockReason) !== undefined;
  return {
    id: str(b.responseId) ?? "",
    model: str(b.modelVersion) ?? "",
    created: nowSeconds(),
    content,
    finishReason: blocked ? "content_filter" : finishOfGemini(cand.finishReason, hasCalls),
    usage: usageOfGemini(b.usageMetadata),
  };
}

export function renderGeminiResponse(res: CanonicalResponse, ctx: ClientResponseContext): Json {
  return {
    candidates: [
      {
        content: { role: "model", parts: geminiPartsOfAssistant(res.content, "", false) },
        finishReason: geminiFinish(res.finishReason),
        index: 0,
      },
    ],
    usageMetadata: geminiUsage(res.usage),
    modelVersion: ctx.model,
    responseId: res.id,
  };
}
