// Anthropic Messages requests: client body → canonical, canonical → upstream body.

import { z } from "zod";
import type {
  CanonicalRequest,
  HostedTool,
  ReasoningConfig,
  ReasoningEffort,
  ResponseFormat,
  ToolChoice,
  ToolDefinition,
} from "../canonical.ts";
import {
  DEFAULT_ANTHROPIC_MAX_TOKENS,
  type Json,
  always,
  budgetOf,
  invalid,
  unsupported,
  untranslatableOf,
} from "../shared.ts";
import type { BuildOptions, UpstreamRequest } from "../types.ts";
import { Translation, unknownFields } from "../translation.ts";
import { type ParamTable, readParams, writeParams } from "../params.ts";
import { JSON_ANSWER_TOOL } from "./response.ts";
import { parseBody } from "../validate.ts";
import { anthropicMessage, messagesFromAnthropic, messagesToAnthropic } from "./messages.ts";

/** Anthropic's smallest accepted thinking budget. */
const MIN_THINKING_BUDGET = 1024;

const customTool = z.looseObject({
  type: z.literal("custom").optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
});
// Server tools (web_search_…, code_execution_…) and Anthropic-defined ones (bash_…) have a versioned type:
// hosted tools, which translation.ts's table maps to the upstream's native tool or removes and names.
const tool = z.union([customTool, z.looseObject({ type: z.string(), name: z.string().optional() })]);

/** A versioned tool type's kind and its translation-table row. */
function hostedOf(type: string, name: string | undefined): HostedTool {
  const tool = `tools[].${name ?? type}`;
  if (type.startsWith("web_search_")) return { param: "tools[]: web_search_*", name: tool, kind: "web_search" };
  if (type.startsWith("web_fetch_")) return { param: "tools[]: web_fetch_*", name: tool, kind: "web_fetch" };
  if (type.startsWith("code_execution_"))
    return { param: "tools[]: code_execution_*", name: tool, kind: "code_execution" };
  return { param: "tools[]: other server tools (bash_*, text_editor_*, …)", name: tool, kind: "other" };
}

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
  service_tier: always,
  speed: always,
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
type Body = z.infer<typeof schema>;

function toolChoiceOf(tc: z.infer<typeof toolChoice>): ToolChoice {
  if (tc.type === "any") return { type: "required" };
  return tc.type === "tool" ? { type: "tool", name: (tc as { name: string }).name } : { type: tc.type };
}

/**
 * The reasoning asked for: thinking, and output_config.effort (how much the model spends, reasoning included;
 * the others' effort is the same knob) unless thinking is off or has its explicit budget. An effort alone is the
 * reasoning asked for, named by its parameter.
 */
function reasoningOf(b: Body): ReasoningConfig | undefined {
  const t = b.thinking;
  const r: ReasoningConfig | undefined = !t
    ? undefined
    : t.type === "enabled"
      ? { enabled: true, budgetTokens: (t as { budget_tokens: number }).budget_tokens }
      : t.type === "adaptive"
        ? { enabled: true }
        : { enabled: false };
  const effort = effortOf(b.output_config?.effort);
  if (effort === undefined || r?.enabled === false || r?.budgetTokens !== undefined) return r;
  return { enabled: true, effort, hint: "output_config.effort" };
}

/**
 * Messages' parameters (params.ts): read from a client's body, written to an upstream's. The builder works out
 * tool_choice (with disable_parallel_tool_use in it) and thinking, which depend on more than their value.
 */
const PARAMS: ParamTable<Body> = {
  toolChoice: { name: "tool_choice", read: (b) => b.tool_choice && toolChoiceOf(b.tool_choice), write: false },
  parallelToolCalls: {
    name: "tool_choice.disable_parallel_tool_use",
    read: (b) =>
      (b.tool_choice as { disable_parallel_tool_use?: boolean } | undefined)?.disable_parallel_tool_use === true
        ? false
        : undefined,
    write: false,
  },
  stop: { name: "stop_sequences", read: (b) => (b.stop_sequences?.length ? b.stop_sequences : undefined) },
  temperature: "temperature",
  topP: "top_p",
  topK: "top_k",
  reasoning: { name: "thinking", read: reasoningOf, write: false },
  user: { name: "metadata", read: (b) => b.metadata?.user_id, write: (user) => ({ user_id: user }) },
  responseFormat: {
    name: "output_config",
    read: (b) => {
      const format = b.output_config?.format ?? b.output_format;
      return format && { type: "json_schema", name: "response", schema: format.schema };
    },
    write: outputConfigOut,
  },
};

export function parseAnthropicRequest(body: unknown): CanonicalRequest {
  const b = parseBody(schema, body);
  const system = b.system === undefined ? [] : typeof b.system === "string" ? [b.system] : b.system.map((s) => s.text);
  const req: CanonicalRequest = {
    model: b.model,
    system: system.filter((s) => s !== ""),
    messages: messagesFromAnthropic(b.messages),
    maxOutputTokens: b.max_tokens,
    stream: b.stream === true,
    protocol: "anthropic",
  };
  const untranslatable = untranslatableOf(b, UNTRANSLATABLE);
  if (b.tools) {
    const tools: ToolDefinition[] = [];
    const hosted: HostedTool[] = [];
    for (const raw of b.tools) {
      const c = customTool.safeParse(raw);
      if (!c.success) {
        hosted.push(hostedOf(String(raw.type), typeof raw.name === "string" ? raw.name : undefined));
        continue;
      }
      const t = c.data;
      if (t.defer_loading !== undefined && !untranslatable.includes("tools[].defer_loading"))
        untranslatable.push("tools[].defer_loading");
      tools.push(
        t.description === undefined
          ? { name: t.name, parameters: t.input_schema }
          : { name: t.name, description: t.description, parameters: t.input_schema },
      );
    }
    if (tools.length > 0 || hosted.length === 0) req.tools = tools;
    if (hosted.length > 0) req.hostedTools = hosted;
  }
  if (usesCacheControl(b)) untranslatable.push("cache_control");
  readParams(PARAMS, b, req);
  // An effort level no other vendor has (Anthropic's own scale) is the client's alone.
  const effort = b.output_config?.effort;
  if (typeof effort === "string" && effortOf(effort) === undefined) untranslatable.push("output_config.effort");
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  const unknown = unknownFields(b, KNOWN);
  if (unknown.length > 0) req.unknown = unknown;
  return req;
}

const KNOWN: ReadonlySet<string> = new Set([...Object.keys(schema.shape), ...Object.keys(UNTRANSLATABLE)]);

/** Anthropic's effort levels in the canonical scale: xhigh and max are the top of it. */
function effortOf(e: string | null | undefined): ReasoningEffort | undefined {
  if (e === "low" || e === "medium" || e === "high") return e;
  if (e === "xhigh" || e === "max") return "high";
  return undefined;
}

/** Whether any tool, system block or message block asks for prompt caching (a hint only Anthropic takes). */
function usesCacheControl(b: { tools?: unknown[]; system?: unknown; messages: { content: unknown }[] }): boolean {
  const has = (v: unknown) => v !== null && typeof v === "object" && "cache_control" in v;
  if (b.tools?.some(has)) return true;
  if (Array.isArray(b.system) && b.system.some(has)) return true;
  return b.messages.some((m) => Array.isArray(m.content) && m.content.some(has));
}

/** Canonical → Anthropic structured outputs: a schema is carried (json_object goes through JSON_ANSWER_TOOL). */
function outputConfigOut(rf: ResponseFormat): Json | undefined {
  if (rf.type !== "json_schema") return undefined;
  return { format: { type: "json_schema", schema: rf.schema } };
}

/** Anthropic's server tools for the hosted tools that have one. */
const NATIVE_TOOL: Partial<Record<HostedTool["kind"], Json>> = {
  web_search: { type: "web_search_20250305", name: "web_search" },
  web_fetch: { type: "web_fetch_20250910", name: "web_fetch" },
  code_execution: { type: "code_execution_20250825", name: "code_execution" },
};

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
  opts: BuildOptions,
): UpstreamRequest {
  const tr = new Translation(req.protocol ?? "openai", "anthropic", opts.strict);
  tr.clientParams(req);
  tr.lacks(req, ["n", "logprobs", "presencePenalty", "frequencyPenalty", "seed"]);
  if (req.temperature !== undefined && req.temperature > 1) {
    throw unsupported("temperature", "Anthropic", "the range is 0 to 1");
  }
  const native: Json[] = [];
  for (const h of req.hostedTools ?? []) {
    const n = NATIVE_TOOL[h.kind];
    if (tr.keep(h.param, h.name) && n && !native.some((t) => t.type === n.type)) native.push(n);
  }
  // A JSON-object answer: forced through a tool whose input is the object (see JSON_ANSWER_TOOL).
  const jsonAnswer = req.responseFormat?.type === "json_object";

  const explicitMax = req.maxOutputTokens !== undefined;
  let maxTokens = req.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
  // Anthropic takes no forced tool choice with thinking on: a JSON-object answer goes without reasoning.
  const reasoning = tr.reasoning(req.reasoning, opts.reasoning);
  const thinkingReq = jsonAnswer && reasoning?.enabled ? undefined : { ...req, reasoning };
  if (thinkingReq === undefined) tr.unknown(req.reasoning?.hint ?? "reasoning");
  const thinking = thinkingReq && thinkingOut(thinkingReq, maxTokens, explicitMax);
  if (thinking) maxTokens = thinking.maxTokens;

  const body: Json = { model: upstreamModel, max_tokens: maxTokens, messages: messagesToAnthropic(req.messages) };
  if (req.system.length > 0) body.system = req.system.join("\n\n");
  const tools: Json[] = (req.tools ?? []).map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    input_schema: t.parameters ?? { type: "object", properties: {} },
  }));
  tools.push(...native);
  if (jsonAnswer) {
    tools.push({
      name: JSON_ANSWER_TOOL,
      description: "Give your answer as a JSON object: call this tool with that object as its input.",
      input_schema: { type: "object" },
    });
  }
  if (req.tools || tools.length > 0) body.tools = tools;
  // With the client's own tools offered, a JSON answer or one of those calls (any tool); else the JSON tool.
  const tc = jsonAnswer
    ? tools.length > 1
      ? { type: "any" }
      : { type: "tool", name: JSON_ANSWER_TOOL }
    : toolChoiceOut(req.toolChoice, req.parallelToolCalls);
  writeParams(PARAMS, req, body, { toolChoice: tc, reasoning: thinking?.thinking });
  if (opts.stream) body.stream = true;
  return { path: "/messages", body, headers: { "content-type": "application/json" }, ...tr.result() };
}
