// OpenAI Chat Completions requests: client body → canonical, canonical → upstream body.

import { z } from "zod";
import type {
  AssistantPart,
  CanonicalMessage,
  CanonicalRequest,
  ReasoningConfig,
  ResponseFormat,
  ToolChoice,
  UserPart,
} from "../canonical.ts";
import {
  always,
  dataUrlOf,
  effortOut,
  imageSourceOfUrl,
  type JsonSchemaFormat,
  jsonSchemaFormatOf,
  jsonSchemaFormatOut,
  invalid,
  obj,
  unsupported,
  untranslatableOf,
} from "../shared.ts";
import { parseBody } from "../validate.ts";
import type { BuildOptions, UpstreamRequest } from "../types.ts";
import { Translation, unknownFields } from "../translation.ts";
import { type ParamTable, readParams, writeParams } from "../params.ts";

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string(), detail: z.string().optional() }),
});
// Other part types (input_audio, file) are kept loose here and refused below with a precise message.
const otherPart = z.looseObject({ type: z.string() });
const contentPart = z.union([textPart, imagePart, otherPart]);
const content = z.union([z.string(), z.array(contentPart)]);

const toolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const message = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content }),
  z.looseObject({ role: z.literal("developer"), content }),
  z.looseObject({ role: z.literal("user"), content }),
  z.looseObject({
    role: z.literal("assistant"),
    content: content.nullish(),
    tool_calls: z.array(toolCall).nullish(),
    reasoning_content: z.string().nullish(),
    refusal: z.string().nullish(),
  }),
  z.looseObject({ role: z.literal("tool"), tool_call_id: z.string(), content }),
]);

const tool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const toolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string() }) }),
]);

const responseFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    json_schema: z.looseObject({
      name: z.string(),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

const schema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  n: z.number().int().min(1).nullish(),
  response_format: responseFormat.nullish(),
  user: z.string().nullish(),
  seed: z.number().int().nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  logprobs: z.boolean().nullish(),
  reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high"]).nullish(),
});
type Body = z.infer<typeof schema>;

/** Chat Completions parameters no other protocol carries that change the answer (at a value other than the default). */
const UNTRANSLATABLE: Record<string, (v: unknown) => boolean> = {
  logit_bias: (v) => Object.keys(obj(v)).length > 0,
  top_logprobs: (v) => v !== 0,
  verbosity: (v) => v !== "medium",
  // A processing mode (flex, priority, scale) the other vendors do not offer; auto and default are what any upstream does.
  service_tier: (v) => v !== "auto" && v !== "default",
  modalities: (v) => Array.isArray(v) && v.some((m) => m !== "text"),
  audio: always,
  web_search_options: always,
  functions: always,
  function_call: always,
};

type Content = z.infer<typeof content>;

/**
 * A part whose type is text or image_url must have that type's shape: the content union lets a malformed one
 * through as an "other" part (so that unknown types get a precise refusal), so it is checked again here.
 */
function textOf(p: z.infer<typeof contentPart>, at: string): string {
  const t = textPart.safeParse(p);
  if (!t.success) throw invalid("invalid_type", "A text content part needs a string 'text'.", `${at}.text`);
  return t.data.text;
}

function userParts(c: Content, param: string): UserPart[] {
  if (typeof c === "string") return [{ type: "text", text: c }];
  return c.map((p, i): UserPart => {
    if (p.type === "text") return { type: "text", text: textOf(p, `${param}[${i}]`) };
    if (p.type === "image_url") {
      const img = imagePart.safeParse(p);
      if (!img.success) {
        throw invalid(
          "invalid_type",
          "An image_url content part needs an 'image_url' object with a string 'url'.",
          `${param}[${i}].image_url`,
        );
      }
      return { type: "image", source: imageSourceOfUrl(img.data.image_url.url, img.data.image_url.detail) };
    }
    throw invalid("invalid_value", `Content part type '${p.type}' is not supported.`, `${param}[${i}].type`);
  });
}

function textOnly(c: Content, param: string): string {
  return userParts(c, param)
    .map((p, i) => {
      if (p.type !== "text") throw invalid("invalid_value", "Only text content is allowed here.", `${param}[${i}]`);
      return p.text;
    })
    .join("");
}

function reasoningOf(effort: Body["reasoning_effort"]): ReasoningConfig | undefined {
  if (effort == null) return undefined;
  if (effort === "none") return { enabled: false };
  return { enabled: true, effort };
}

function responseFormatOf(rf: z.infer<typeof responseFormat>): ResponseFormat {
  if (rf.type !== "json_schema") return { type: rf.type };
  return jsonSchemaFormatOf((rf as { json_schema: JsonSchemaFormat }).json_schema);
}

function toolChoiceOf(tc: z.infer<typeof toolChoice>): ToolChoice {
  if (typeof tc === "string") return { type: tc };
  return { type: "tool", name: tc.function.name };
}

const toolChoiceOut = (tc: ToolChoice): unknown =>
  tc.type === "tool" ? { type: "function", function: { name: tc.name } } : tc.type;

/** Chat Completions' parameters (params.ts): read from a client's body, written to an upstream's. */
const PARAMS: ParamTable<Body> = {
  toolChoice: { name: "tool_choice", read: (b) => b.tool_choice && toolChoiceOf(b.tool_choice), write: toolChoiceOut },
  parallelToolCalls: "parallel_tool_calls",
  stop: { name: "stop", read: (b) => (typeof b.stop === "string" ? [b.stop] : b.stop) },
  temperature: "temperature",
  topP: "top_p",
  // Written as max_completion_tokens, not the deprecated max_tokens: reasoning models reject the latter.
  maxOutputTokens: { name: "max_completion_tokens", read: (b) => b.max_completion_tokens ?? b.max_tokens },
  responseFormat: {
    name: "response_format",
    read: (b) => b.response_format && responseFormatOf(b.response_format),
    write: (rf) => responseFormatOut(rf),
  },
  reasoning: { name: "reasoning_effort", read: (b) => reasoningOf(b.reasoning_effort), write: false },
  // The canonical form carries one choice (Translation.lacks refuses more), which is every upstream's default.
  n: { name: "n", write: false },
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  logprobs: "logprobs",
  user: "user",
};

export function parseOpenAIRequest(body: unknown): CanonicalRequest {
  const b = parseBody(schema, body);
  const system: string[] = [];
  const messages: CanonicalMessage[] = [];
  b.messages.forEach((m, i) => {
    const param = `messages[${i}].content`;
    switch (m.role) {
      case "system":
      case "developer":
        // Leading instructions are the system prompt; later ones stay where the client put them.
        if (messages.length === 0) system.push(textOnly(m.content, param));
        else messages.push({ role: "system", text: textOnly(m.content, param) });
        break;
      case "user":
        messages.push({ role: "user", content: userParts(m.content, param) });
        break;
      case "assistant": {
        const parts: AssistantPart[] = [];
        if (m.reasoning_content) parts.push({ type: "thinking", text: m.reasoning_content });
        if (m.content != null) {
          const text = textOnlyAssistant(m.content, param);
          if (text !== "") parts.push({ type: "text", text });
        }
        for (const tc of m.tool_calls ?? []) {
          parts.push({ type: "tool_call", id: tc.id, name: tc.function.name, arguments: tc.function.arguments });
        }
        messages.push({ role: "assistant", content: parts });
        break;
      }
      case "tool":
        messages.push({
          role: "tool",
          toolCallId: m.tool_call_id,
          content: [{ type: "text", text: textOnly(m.content, param) }],
        });
        break;
    }
  });

  const req: CanonicalRequest = { model: b.model, system, messages, stream: b.stream === true, protocol: "openai" };
  if (b.tools) req.tools = b.tools.map((t) => ({ name: t.function.name, ...optional(t.function) }));
  readParams(PARAMS, b, req);
  if (req.stream && b.stream_options?.include_usage === true) req.streamIncludeUsage = true;
  const untranslatable = untranslatableOf(b, UNTRANSLATABLE);
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  const unknown = unknownFields(b, KNOWN);
  if (unknown.length > 0) req.unknown = unknown;
  return req;
}

/** What the parser reads or judges; any other top-level field is unknown to it (dropped in a translation). */
const KNOWN: ReadonlySet<string> = new Set([...Object.keys(schema.shape), ...Object.keys(UNTRANSLATABLE)]);

/** Assistant content may also hold refusal parts, which are text the model said. */
function textOnlyAssistant(c: Content, param: string): string {
  if (typeof c === "string") return c;
  return c
    .map((p, i) => {
      if (p.type === "text") return textOf(p, `${param}[${i}]`);
      const refusal = (p as Record<string, unknown>).refusal;
      if (p.type === "refusal" && typeof refusal === "string") return refusal;
      throw invalid("invalid_value", "Only text content is allowed in assistant messages.", `${param}[${i}]`);
    })
    .join("");
}

function optional(f: { description?: string | undefined; parameters?: Record<string, unknown> | undefined }) {
  const out: { description?: string; parameters?: Record<string, unknown> } = {};
  if (f.description !== undefined) out.description = f.description;
  if (f.parameters !== undefined) out.parameters = f.parameters;
  return out;
}

// ---- canonical → OpenAI upstream ----

function userContentOut(parts: UserPart[]): string | Record<string, unknown>[] {
  if (parts.length === 1 && parts[0]?.type === "text") return parts[0].text;
  return parts.map((p) =>
    p.type === "text"
      ? { type: "text", text: p.text }
      : {
          type: "image_url",
          image_url:
            p.source.kind === "url"
              ? { url: p.source.url, ...(p.source.detail ? { detail: p.source.detail } : {}) }
              : { url: dataUrlOf(p.source.mediaType, p.source.data) },
        },
  );
}

function messagesOut(req: CanonicalRequest): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = req.system.map((s) => ({ role: "system", content: s }));
  req.messages.forEach((m, i) => {
    if (m.role === "system") {
      out.push({ role: "system", content: m.text });
    } else if (m.role === "user") {
      out.push({ role: "user", content: userContentOut(m.content) });
    } else if (m.role === "assistant") {
      // Thinking is not sent back: OpenAI-style upstreams reject or ignore reasoning in the input.
      const text = m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
      const calls = m.content.flatMap((p) =>
        p.type === "tool_call"
          ? [{ id: p.id, type: "function", function: { name: p.name, arguments: p.arguments } }]
          : [],
      );
      const msg: Record<string, unknown> = {
        role: "assistant",
        content: text === "" && calls.length > 0 ? null : text,
      };
      if (calls.length > 0) msg.tool_calls = calls;
      out.push(msg);
    } else {
      const text = m.content
        .map((p, j) => {
          if (p.type !== "text")
            throw unsupported(`messages[${i}].content[${j}]`, "OpenAI", "tool results can only hold text");
          return p.text;
        })
        .join("");
      out.push({ role: "tool", tool_call_id: m.toolCallId, content: text });
    }
  });
  return out;
}

export function buildOpenAIRequest(req: CanonicalRequest, upstreamModel: string, opts: BuildOptions): UpstreamRequest {
  const tr = new Translation(req.protocol ?? "openai", "openai", opts.strict);
  tr.clientParams(req);
  tr.lacks(req, ["topK"]);
  const body: Record<string, unknown> = { model: upstreamModel, messages: messagesOut(req) };
  // Hosted tools: Chat Completions runs none of them (web_search_options is a model's built-in, not a tool).
  for (const h of req.hostedTools ?? []) tr.keep(h.param, h.name);
  if (req.tools) {
    body.tools = req.tools.map((t) => ({
      type: "function",
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.parameters ?? { type: "object", properties: {} },
      },
    }));
  }
  // Only an explicit effort or budget is forwarded, and an effort hint (Anthropic's output_config.effort) only
  // to a model configured with reasoning (Translation.reasoning).
  const reasoning = effortOut(tr.reasoning(req.reasoning, opts.reasoning));
  tr.lacks(req, ["n"]);
  writeParams(PARAMS, req, body, { reasoning });
  if (opts.stream) {
    body.stream = true;
    // Always: the gateway bills from the stream's usage chunk, whatever the client asked for. An upstream that
    // sends it unasked and refuses the field (UpstreamTraits.streamUsageUnasked: Mistral) is not sent it.
    if (opts.streamUsageUnasked !== true) body.stream_options = { include_usage: true };
  }
  return { path: "/chat/completions", body, headers: { "content-type": "application/json" }, ...tr.result() };
}

function responseFormatOut(rf: ResponseFormat): Record<string, unknown> {
  if (rf.type !== "json_schema") return { type: rf.type };
  return { type: "json_schema", json_schema: jsonSchemaFormatOut(rf) };
}
