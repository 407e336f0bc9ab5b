// Canonical → Bedrock Converse (POST /model/{modelId}/converse and /converse-stream). Converse is Bedrock's one
// request shape for every model it hosts; its turns, tool blocks and limits follow Anthropic's Messages, so the
// translation table toward Anthropic says what a client parameter becomes here too (Translation's "anthropic"
// rows, refusals naming Bedrock Converse). What only one model family takes (reasoning) goes in
// additionalModelRequestFields, in that family's own terms.

import type { CanonicalMessage, CanonicalRequest, ReasoningConfig, UserPart } from "../canonical.ts";
import { type Json, budgetOf, invalid, parseArguments, systemNote, unsupported } from "../shared.ts";
import { Translation } from "../translation.ts";
import { type ParamTable, writeParams } from "../params.ts";
import type { BuildOptions, UpstreamRequest } from "../types.ts";

export const CONVERSE_LABEL = "Bedrock Converse";

/** Converse's image formats, by media type. */
const IMAGE_FORMAT: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
};

/**
 * A model id as Bedrock's path carries it: encoded once (`:` → `%3A`, `/` of an ARN → `%2F`), as the AWS SDK
 * encodes a path label; the signature then covers it encoded once more.
 */
export const modelPathSegment = (modelId: string): string =>
  encodeURIComponent(modelId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Converse's path for a model: the answer at once, or as an event stream. */
export const conversePath = (modelId: string, stream: boolean): string =>
  `/model/${modelPathSegment(modelId)}/${stream ? "converse-stream" : "converse"}`;

function userBlock(p: UserPart, param: string): Json {
  if (p.type === "text") return { text: p.text };
  if (p.source.kind === "url")
    throw unsupported(param, CONVERSE_LABEL, "images must be inline (base64 or a data: URL), not fetched from a URL");
  const format = IMAGE_FORMAT[p.source.mediaType.toLowerCase()];
  if (format === undefined)
    throw unsupported(param, CONVERSE_LABEL, `images are PNG, JPEG, GIF or WebP (not ${p.source.mediaType})`);
  return { image: { format, source: { bytes: p.source.data } } };
}

/** Canonical turns → Converse's user/assistant turns: tool results ride in user turns, as in Anthropic's. */
export function messagesToConverse(messages: CanonicalMessage[]): Json[] {
  const out: { role: "user" | "assistant"; content: Json[] }[] = [];
  const turn = (role: "user" | "assistant"): Json[] => {
    const last = out[out.length - 1];
    if (last && last.role === role) return last.content;
    const fresh = { role, content: [] as Json[] };
    out.push(fresh);
    return fresh.content;
  };
  messages.forEach((m, i) => {
    if (m.role === "system") {
      // Converse has no system turn mid-conversation: the note joins the user turn, delimited.
      turn("user").push({ text: systemNote(m.text) });
    } else if (m.role === "user") {
      turn("user").push(...m.content.map((p, j) => userBlock(p, `messages[${i}].content[${j}]`)));
    } else if (m.role === "tool") {
      const content = m.content.map((p, j) => userBlock(p, `messages[${i}].content[${j}]`));
      turn("user").push({
        toolResult: {
          toolUseId: m.toolCallId,
          // Converse refuses a tool result without content.
          content: content.length > 0 ? content : [{ text: "" }],
          ...(m.isError ? { status: "error" } : {}),
        },
      });
    } else {
      const blocks = turn("assistant");
      m.content.forEach((p, j) => {
        if (p.type === "text") {
          if (p.text !== "") blocks.push({ text: p.text });
        } else if (p.type === "thinking") {
          // Reasoning goes back only with its signature (the model that wrote it checks it); unsigned stays behind.
          if (p.signature)
            blocks.push({ reasoningContent: { reasoningText: { text: p.text, signature: p.signature } } });
        } else {
          blocks.push({
            toolUse: {
              toolUseId: p.id,
              name: p.name,
              input: parseArguments(p.arguments, `messages[${i}].tool_calls[${j}].function.arguments`),
            },
          });
        }
      });
    }
  });
  return out.filter((t) => t.content.length > 0);
}

/** Where each client protocol asks for reasoning (the name a dropped request for it is listed by). */
const REASONING_PARAM: Record<string, string> = {
  openai: "reasoning_effort",
  anthropic: "thinking",
  gemini: "generationConfig.thinkingConfig",
  "openai-responses": "reasoning.effort",
};

/** Bedrock's own prefix of a model id: `amazon.nova-…`, `us.amazon.nova-…` (a cross-region inference profile). */
const family = (modelId: string, name: string): boolean =>
  new RegExp(`^(?:[a-z]{2,6}(?:-[a-z]+)?\\.)?${name.replace(/\./g, "\\.")}`).test(modelId);

/**
 * Reasoning in the terms of the model families that take it through Converse (additionalModelRequestFields);
 * undefined when the model's family has no such field (the request for it is dropped and named).
 */
function reasoningFields(r: ReasoningConfig, modelId: string, maxTokens: number | undefined): Json | undefined {
  const effort = r.effort === "minimal" ? "low" : (r.effort ?? "medium");
  if (family(modelId, "amazon.nova-2")) {
    return r.enabled ? { reasoningConfig: { type: "enabled", maxReasoningEffort: effort } } : {};
  }
  if (family(modelId, "openai.gpt-oss")) return r.enabled ? { reasoning_effort: effort } : {};
  if (family(modelId, "anthropic.")) {
    if (!r.enabled) return { thinking: { type: "disabled" } };
    let budget = Math.max(budgetOf(r) ?? 1024, 1024);
    if (maxTokens !== undefined && budget >= maxTokens) budget = maxTokens - 1;
    if (budget < 1024)
      throw invalid("invalid_value", "With reasoning enabled, the maximum output tokens must exceed 1024.", null);
    return { thinking: { type: "enabled", budget_tokens: budget } };
  }
  return undefined;
}

/** Converse's inferenceConfig, the parameters every model takes (params.ts; Converse is no client protocol). */
interface InferenceConfig {
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
}
const INFERENCE: ParamTable<InferenceConfig> = {
  maxOutputTokens: "maxTokens",
  temperature: "temperature",
  topP: "topP",
  stop: { name: "stopSequences", write: (stop) => (stop.length > 0 ? stop : undefined) },
};

export function buildConverseRequest(
  req: CanonicalRequest,
  upstreamModel: string,
  opts: BuildOptions,
): UpstreamRequest {
  const client = req.protocol ?? "openai";
  const tr = new Translation(client, "anthropic", opts.strict, CONVERSE_LABEL);
  tr.clientParams(req);
  tr.lacks(req, ["n", "logprobs", "presencePenalty", "frequencyPenalty", "seed"]);
  // top_k is a model's own field in Converse (additionalModelRequestFields), named differently by each family.
  if (req.topK !== undefined) tr.unknown(client === "anthropic" ? "top_k" : "generationConfig.topK");
  if (req.user !== undefined) tr.unknown(client === "anthropic" ? "metadata.user_id" : "user");
  // Converse has no switch for one call at a time: the model decides.
  if (req.parallelToolCalls === false)
    tr.unknown(client === "anthropic" ? "tool_choice.disable_parallel_tool_use" : "parallel_tool_calls");
  // Converse runs no vendor tools: every hosted tool is removed and named (refused when strict).
  for (const h of req.hostedTools ?? []) tr.unknown(h.name);

  const body: Json = { messages: messagesToConverse(req.messages) };
  if (req.system.length > 0) body.system = req.system.map((text) => ({ text }));
  const inference: Json = {};
  writeParams(INFERENCE, req, inference);
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference;

  // Converse has no "none": without tools in the history, no tools are offered; with them, the tools stay
  // (Converse requires the definitions of tools the conversation used) and the model chooses.
  const history = req.messages.some(
    (m) => m.role === "tool" || (m.role === "assistant" && m.content.some((p) => p.type === "tool_call")),
  );
  const tools = req.tools ?? [];
  if (tools.length > 0 && (req.toolChoice?.type !== "none" || history)) {
    const config: Json = {
      tools: tools.map((t) => ({
        toolSpec: {
          name: t.name,
          ...(t.description !== undefined && t.description !== "" ? { description: t.description } : {}),
          inputSchema: { json: t.parameters ?? { type: "object", properties: {} } },
        },
      })),
    };
    const tc = req.toolChoice;
    if (tc?.type === "required") config.toolChoice = { any: {} };
    else if (tc?.type === "tool") config.toolChoice = { tool: { name: tc.name } };
    else if (tc?.type === "auto") config.toolChoice = { auto: {} };
    else if (tc?.type === "none") tr.unknown(client === "anthropic" ? "tool_choice" : "tool_choice: none");
    body.toolConfig = config;
  }

  const rf = req.responseFormat;
  if (rf?.type === "json_schema") {
    const jsonSchema: Json = { schema: JSON.stringify(rf.schema), name: rf.name };
    if (rf.description !== undefined) jsonSchema.description = rf.description;
    body.outputConfig = { textFormat: { type: "json_schema", structure: { jsonSchema } } };
  } else if (rf?.type === "json_object") {
    // Converse's structured output needs a schema: a schema-less object is the least one.
    body.outputConfig = {
      textFormat: { type: "json_schema", structure: { jsonSchema: { schema: '{"type":"object"}', name: "response" } } },
    };
  }

  const reasoning = tr.reasoning(req.reasoning, opts.reasoning);
  if (reasoning) {
    const fields = reasoningFields(reasoning, upstreamModel, req.maxOutputTokens);
    if (fields === undefined) {
      if (reasoning.enabled) tr.unknown(reasoning.hint ?? REASONING_PARAM[client] ?? "reasoning");
    } else if (Object.keys(fields).length > 0) body.additionalModelRequestFields = fields;
  }
  return {
    path: conversePath(upstreamModel, opts.stream),
    body,
    headers: { "content-type": "application/json" },
    ...tr.result(),
  };
}
