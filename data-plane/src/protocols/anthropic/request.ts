// Anthropic Messages requests: client body → canonical, canonical → upstream body.

import { z } from "zod";
import type { CanonicalRequest, ReasoningConfig, ResponseFormat, ToolChoice } from "../canonical.ts";
import {
  DEFAULT_ANTHROPIC_MAX_TOKENS,
  type Json,
  always,
  budgetOf,
  invalid,
  refuseUntranslatable,
  unsupported,
  untranslatableOf,
} from "../shared.ts";
import type { UpstreamRequest } from "../types.ts";
import { parseBody } from "../validate.ts";
import { anthropicMessage, messagesFromAnthropic, messagesToAnthropic } from "./messages.ts";

/** Anthropic's smallest accepted thinking budget. */
const MIN_THINKING_BUDGET = 1024;

const tool = z.looseObject({
  // Server tools (web_search_…, bash_…) have a versioned type and run at Anthropic: they cannot be translated.
  type: z.literal("custom").optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
});

const toolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("none") }),
  z.looseObject({ type: z.literal("tool"), name: z.string(), disable_parallel_tool_use: z.boolean().optional() }),
]);

const thinking = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(MIN_THINKING_BUDGET) }),
  z.looseObject({ type: z.literal("disabled") }),
  z.looseObject({ type: z.literal("adaptive") }),
]);

/** Structured outputs: the answer is JSON matching the schema (constrained decoding). */
const outputFormat = z.looseObject({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) });

// Messages parameters no other protocol carries that change the answer. output_config.effort spends more or
// fewer tokens on every part of the answer, which no other vendor's parameter means.
const UNTRANSLATABLE: Record<string, (v: unknown) => boolean> = {
  mcp_servers: (v) => Array.isArray(v) && v.length > 0,
  container: always,
  context_management: always,
};

const schema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(anthropicMessage).min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.literal("text"), text: z.string() }))]).optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  output_config: z.looseObject({ format: outputFormat.nullish(), effort: z.string().nullish() }).optional(),
  /** the structured-outputs beta's name for output_config.format */
  output_format: outputFormat.nullish(),
});

export function parseAnthropicRequest(body: unknown): CanonicalRequest {
  const b = parseBody(schema, body);
  const system = b.system === undefined ? [] : typeof b.system === "string" ? [b.system] : b.system.map((s) => s.text);
  const req: CanonicalRequest = {
    model: b.model,
    system: system.filter((s) => s !== ""),
    messages: messagesFromAnthropic(b.messages),
    maxOutputTokens: b.max_tokens,
    stream: b.stream === true,
  };
  if (b.tools) {
    req.tools = b.tools.map((t) =>
      t.description === undefined
        ? { name: t.name, parameters: t.input_schema }
        : { name: t.name, description: t.description, parameters: t.input_schema },
    );
  }
  if (b.tool_choice) {
    const tc = b.tool_choice;
    const choice: ToolChoice =
      tc.type === "any"
        ? { type: "required" }
        : tc.type === "tool"
          ? { type: "tool", name: (tc as { name: string }).name }
          : { type: tc.type };
    req.toolChoice = choice;
    if ((tc as { disable_parallel_tool_use?: boolean }).disable_parallel_tool_use === true)
      req.parallelToolCalls = false;
  }
  if (b.stop_sequences && b.stop_sequences.length > 0) req.stop = b.stop_sequences;
  if (b.temperature !== undefined) req.temperature = b.temperature;
  if (b.top_p !== undefined) req.topP = b.top_p;
  if (b.top_k !== undefined) req.topK = b.top_k;
  if (b.thinking) {
    const t = b.thinking;
    const r: ReasoningConfig =
      t.type === "enabled"
        ? { enabled: true, budgetTokens: (t as { budget_tokens: number }).budget_tokens }
        : t.type === "adaptive"
          ? { enabled: true }
          : { enabled: false };
    req.reasoning = r;
  }
  if (b.metadata?.user_id != null) req.user = b.metadata.user_id;
  const format = b.output_config?.format ?? b.output_format;
  if (format) req.responseFormat = { type: "json_schema", name: "response", schema: format.schema };
  const untranslatable = untranslatableOf(b, UNTRANSLATABLE);
  if (b.output_config?.effort != null) untranslatable.push("output_config.effort");
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  return req;
}

/** Canonical → Anthropic structured outputs: a schema is carried; JSON without one has no Anthropic form. */
function outputConfigOut(rf: ResponseFormat | undefined): Json | undefined {
  if (!rf || rf.type === "text") return undefined;
  if (rf.type === "json_object") {
    throw unsupported(
      "response_format",
      "Anthropic",
      "Anthropic's structured outputs need a schema: send json_schema instead of json_object",
    );
  }
  return { format: { type: "json_schema", schema: rf.schema } };
}

function thinkingOut(
  req: CanonicalRequest,
  maxTokens: number,
  explicitMax: boolean,
): { thinking: Json; maxTokens: number } | undefined {
  const r = req.reasoning;
  if (!r) return undefined;
  if (!r.enabled) return { thinking: { type: "disabled" }, maxTokens };
  let budget = budgetOf(r);
  // Neither effort nor budget: the client left it to the model, which is Anthropic's adaptive mode.
  if (budget === undefined) return { thinking: { type: "adaptive" }, maxTokens };
  budget = Math.max(budget, MIN_THINKING_BUDGET);
  if (!explicitMax) {
    // The default max_tokens is for the answer; thinking comes on top, as max_tokens includes it.
    return { thinking: { type: "enabled", budget_tokens: budget }, maxTokens: budget + DEFAULT_ANTHROPIC_MAX_TOKENS };
  }
  // max_tokens includes the thinking budget and Anthropic requires budget < max_tokens.
  if (budget >= maxTokens) budget = maxTokens - 1;
  if (budget < MIN_THINKING_BUDGET) {
    throw invalid(
      "invalid_value",
      `With reasoning enabled, the maximum output tokens must exceed ${MIN_THINKING_BUDGET} for this model's Anthropic upstream.`,
      "max_tokens",
    );
  }
  return { thinking: { type: "enabled", budget_tokens: budget }, maxTokens };
}

function toolChoiceOut(tc: ToolChoice | undefined, parallel: boolean | undefined): Json | undefined {
  const disable = parallel === false;
  if (!tc) return disable ? { type: "auto", disable_parallel_tool_use: true } : undefined;
  const out: Json =
    tc.type === "required" ? { type: "any" } : tc.type === "tool" ? { type: "tool", name: tc.name } : { type: tc.type };
  if (disable && tc.type !== "none") out.disable_parallel_tool_use = true;
  return out;
}

export function buildAnthropicRequest(
  req: CanonicalRequest,
  upstreamModel: string,
  opts: { stream: boolean },
): UpstreamRequest {
  refuseUntranslatable(req, "Anthropic");
  const outputConfig = outputConfigOut(req.responseFormat);
  if (req.n !== undefined && req.n > 1) throw unsupported("n", "Anthropic", "only one choice per request");
  if (req.logprobs === true) throw unsupported("logprobs", "Anthropic");
  if (req.presencePenalty !== undefined) throw unsupported("presence_penalty", "Anthropic");
  if (req.frequencyPenalty !== undefined) throw unsupported("frequency_penalty", "Anthropic");
  if (req.temperature !== undefined && req.temperature > 1) {
    throw unsupported("temperature", "Anthropic", "the range is 0 to 1");
  }
  // `seed` is dropped: it asks for best-effort reproducibility and does not change what is answered.

  const explicitMax = req.maxOutputTokens !== undefined;
  let maxTokens = req.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
  const thinking = thinkingOut(req, maxTokens, explicitMax);
  if (thinking) maxTokens = thinking.maxTokens;

  const body: Json = { model: upstreamModel, max_tokens: maxTokens, messages: messagesToAnthropic(req.messages) };
  if (req.system.length > 0) body.system = req.system.join("\n\n");
  if (req.tools) {
    body.tools = req.tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.parameters ?? { type: "object", properties: {} },
    }));
  }
  const tc = toolChoiceOut(req.toolChoice, req.parallelToolCalls);
  if (tc) body.tool_choice = tc;
  if (req.stop) body.stop_sequences = req.stop;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.topK !== undefined) body.top_k = req.topK;
  if (thinking) body.thinking = thinking.thinking;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (outputConfig) body.output_config = outputConfig;
  if (opts.stream) body.stream = true;
  return { path: "/messages", body, headers: { "content-type": "application/json" } };
}
