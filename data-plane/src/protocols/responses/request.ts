// OpenAI Responses API requests: client body → canonical, canonical → upstream body.
// Items map onto canonical messages: system/developer messages become system prompts, user messages user
// messages, and each run of assistant-side items (messages, reasoning, function calls) one assistant message;
// a function_call_output is a tool message. Reasoning items carry their summary as thinking text and their
// encrypted_content as the thinking signature, so a vendor's signed reasoning survives the round trip.

import { z } from "zod";
import type {
  AssistantMessage,
  AssistantPart,
  CanonicalMessage,
  CanonicalRequest,
  HostedTool,
  ReasoningConfig,
  ResponseFormat,
  ToolChoice,
  ToolDefinition,
  UserPart,
} from "../canonical.ts";
import {
  type JsonSchemaFormat,
  dataUrlOf,
  effortOut,
  imageSourceOfUrl,
  invalid,
  jsonSchemaFormatOf,
  jsonSchemaFormatOut,
  unsupported,
} from "../shared.ts";
import { formatPath, parseBody } from "../validate.ts";
import type { BuildOptions, UpstreamRequest } from "../types.ts";
import { Translation, unknownFields } from "../translation.ts";
import { type ParamTable, readParams, writeParams } from "../params.ts";

const UPSTREAM = "OpenAI Responses";

const formatSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string(),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullish(),
  }),
]);

const functionTool = z.looseObject({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const schema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z
    .union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.string(), name: z.string().optional() })])
    .nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.looseObject({ format: formatSchema.nullish(), verbosity: z.string().nullish() }).nullish(),
  reasoning: z
    .looseObject({
      effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
      summary: z.string().nullish(),
    })
    .nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  include: z.array(z.string()).nullish(),
  stream: z.boolean().nullish(),
  user: z.string().nullish(),
  background: z.boolean().nullish(),
  top_logprobs: z.number().int().nullish(),
  service_tier: z.string().nullish(),
});

export type ResponsesBody = z.infer<typeof schema>;

/** Validates the request body (also for the same-protocol path, which sends the client's bytes on). */
export const parseResponsesBody = (body: unknown): ResponsesBody => parseBody(schema, body);

const messageItem = z.looseObject({
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]),
});
const functionCallItem = z.looseObject({
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  namespace: z.string().nullish(),
});

/**
 * A namespaced function (Codex's MCP tool groups: a `namespace` tool holding function tools) as one flat
 * function name for upstreams that have no namespaces; namespacesOf maps the calls back.
 */
export const flatName = (namespace: string, name: string): string =>
  namespace.endsWith("_") ? `${namespace}${name}` : `${namespace}__${name}`;

/** Flat name → namespace and name, for the namespaced function tools of a client's request body. */
export function namespacesOf(body: unknown): Map<string, { namespace: string; name: string }> {
  const out = new Map<string, { namespace: string; name: string }>();
  const tools = (body as { tools?: unknown } | null | undefined)?.tools;
  if (!Array.isArray(tools)) return out;
  for (const t of tools as Record<string, unknown>[]) {
    if (t?.type !== "namespace" || typeof t.name !== "string" || !Array.isArray(t.tools)) continue;
    for (const f of t.tools as Record<string, unknown>[])
      if (f?.type === "function" && typeof f.name === "string")
        out.set(flatName(t.name, f.name), { namespace: t.name, name: f.name });
  }
  return out;
}
const functionOutputItem = z.looseObject({
  call_id: z.string(),
  output: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]),
});
const reasoningItem = z.looseObject({
  summary: z.array(z.looseObject({ text: z.string() })).nullish(),
  content: z.array(z.looseObject({ text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});

function at<S extends z.ZodType>(s: S, value: unknown, param: string): z.output<S> {
  const r = s.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = issue ? formatPath(issue.path) : "";
  const full = path === "" ? param : path.startsWith("[") ? `${param}${path}` : `${param}.${path}`;
  throw invalid("invalid_value", `Invalid '${full}': ${issue?.message ?? "invalid value"}.`, full);
}

/** The kind of an input item: `type`, or `message` for the short form that has only a role. */
export const itemType = (item: Record<string, unknown>): string =>
  typeof item.type === "string" ? item.type : typeof item.role === "string" ? "message" : "unknown";

type Part = { type: string } & Record<string, unknown>;

function userParts(content: string | Part[], param: string): UserPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((p, i): UserPart => {
    if ((p.type === "input_text" || p.type === "output_text") && typeof p.text === "string")
      return { type: "text", text: p.text };
    if (p.type === "input_image") {
      if (typeof p.image_url !== "string")
        throw invalid(
          "invalid_value",
          "Only images given by URL (image_url) can be used; file_id needs the vendor's file storage.",
          `${param}[${i}].image_url`,
        );
      const detail = typeof p.detail === "string" && p.detail !== "auto" ? p.detail : undefined;
      return { type: "image", source: imageSourceOfUrl(p.image_url, detail) };
    }
    throw invalid("invalid_value", `Content part type '${p.type}' is not supported.`, `${param}[${i}].type`);
  });
}

function textOf(content: string | Part[], param: string): string {
  if (typeof content === "string") return content;
  return content
    .map((p, i) => {
      if ((p.type === "input_text" || p.type === "output_text") && typeof p.text === "string") return p.text;
      if (p.type === "refusal" && typeof p.refusal === "string") return p.refusal;
      throw invalid("invalid_value", "Only text content is allowed here.", `${param}[${i}]`);
    })
    .join("");
}

function reasoningOf(r: ResponsesBody["reasoning"]): ReasoningConfig | undefined {
  const effort = r?.effort;
  if (effort == null) return undefined;
  if (effort === "none") return { enabled: false };
  return { enabled: true, effort: effort === "xhigh" ? "high" : effort };
}

function formatOf(f: z.infer<typeof formatSchema>): ResponseFormat {
  if (f.type !== "json_schema") return { type: f.type };
  return jsonSchemaFormatOf(f as JsonSchemaFormat);
}

function toolChoiceOf(tc: NonNullable<ResponsesBody["tool_choice"]>): ToolChoice {
  if (typeof tc === "string") return { type: tc };
  if (tc.type === "function" && tc.name) return { type: "tool", name: tc.name };
  throw invalid(
    "invalid_value",
    `tool_choice of type '${tc.type}' cannot be translated; only function tools can.`,
    "tool_choice",
  );
}

const toolChoiceOut = (tc: ToolChoice): unknown => (tc.type === "tool" ? { type: "function", name: tc.name } : tc.type);

/** The Responses API's parameters (params.ts): read from a client's body, written to an upstream's. */
const PARAMS: ParamTable<ResponsesBody> = {
  toolChoice: { name: "tool_choice", read: (b) => b.tool_choice && toolChoiceOf(b.tool_choice), write: toolChoiceOut },
  parallelToolCalls: "parallel_tool_calls",
  temperature: "temperature",
  topP: "top_p",
  maxOutputTokens: "max_output_tokens",
  responseFormat: {
    name: "text",
    read: (b) => b.text?.format && formatOf(b.text.format),
    write: (rf) => ({ format: formatOut(rf) }),
  },
  reasoning: { name: "reasoning", read: (b) => reasoningOf(b.reasoning), write: false },
  user: "user",
};

export function parseResponsesRequest(body: unknown): CanonicalRequest {
  const b = parseResponsesBody(body);
  const system: string[] = [];
  if (b.instructions) system.push(b.instructions);
  const messages: CanonicalMessage[] = [];
  const assistant = (): AssistantMessage => {
    const last = messages.at(-1);
    if (last?.role === "assistant") return last;
    const m: AssistantMessage = { role: "assistant", content: [] };
    messages.push(m);
    return m;
  };
  const items = typeof b.input === "string" ? [{ role: "user", content: b.input }] : (b.input ?? []);
  items.forEach((item, i) => {
    const param = `input[${i}]`;
    const type = itemType(item);
    switch (type) {
      case "message": {
        const m = at(messageItem, item, param);
        // Leading instructions are the system prompt; later ones stay in place.
        if ((m.role === "system" || m.role === "developer") && messages.length === 0)
          system.push(textOf(m.content as string | Part[], `${param}.content`));
        else if (m.role === "system" || m.role === "developer")
          messages.push({ role: "system", text: textOf(m.content as string | Part[], `${param}.content`) });
        else if (m.role === "user")
          messages.push({ role: "user", content: userParts(m.content as string | Part[], `${param}.content`) });
        else {
          const text = textOf(m.content as string | Part[], `${param}.content`);
          if (text !== "") assistant().content.push({ type: "text", text });
        }
        return;
      }
      case "function_call": {
        const c = at(functionCallItem, item, param);
        const parts = assistant().content;
        const name = c.namespace ? flatName(c.namespace, c.name) : c.name;
        const call: AssistantPart = { type: "tool_call", id: c.call_id, name, arguments: c.arguments };
        // A reasoning item with nothing but encrypted_content right before a call is that call's signature.
        const prev = parts.at(-1);
        if (prev?.type === "thinking" && prev.text === "" && prev.signature) {
          parts.pop();
          call.signature = prev.signature;
        }
        parts.push(call);
        return;
      }
      case "function_call_output": {
        const o = at(functionOutputItem, item, param);
        const content: UserPart[] =
          typeof o.output === "string"
            ? [{ type: "text", text: o.output }]
            : userParts(o.output as Part[], `${param}.output`);
        messages.push({ role: "tool", toolCallId: o.call_id, content });
        return;
      }
      case "reasoning": {
        const r = at(reasoningItem, item, param);
        const text = [...(r.summary ?? []), ...(r.content ?? [])].map((s) => s.text).join("\n\n");
        const part: { type: "thinking"; text: string; signature?: string } = { type: "thinking", text };
        if (r.encrypted_content) part.signature = r.encrypted_content;
        if (text !== "" || part.signature) assistant().content.push(part);
        return;
      }
      case "item_reference":
        // The session replaces references with the items they name before parsing, when state is kept.
        throw invalid(
          "invalid_value",
          "Item references need stored responses, which this gateway does not keep: send the full input instead.",
          `${param}.id`,
        );
      default:
        throw invalid(
          "invalid_value",
          `Input items of type '${type}' cannot be translated for this model's upstream.`,
          `${param}.type`,
        );
    }
  });
  if (messages.length === 0)
    throw invalid("missing_required_parameter", "Missing required parameter: 'input'.", "input");

  const req: CanonicalRequest = {
    model: b.model,
    system,
    messages,
    stream: b.stream === true,
    protocol: "openai-responses",
  };
  if (b.tools) {
    const tools: ToolDefinition[] = [];
    const hosted: HostedTool[] = [];
    const fn = (t: unknown, param: string, namespace?: string): void => {
      const f = at(functionTool, t, param);
      tools.push({
        name: namespace === undefined ? f.name : flatName(namespace, f.name),
        ...(f.description != null ? { description: f.description } : {}),
        ...(f.parameters != null ? { parameters: f.parameters } : {}),
      });
    };
    b.tools.forEach((t, i) => {
      if (t.type === "function") fn(t, `tools[${i}]`);
      else if (t.type === "namespace") {
        const ns = at(namespaceTool, t, `tools[${i}]`);
        ns.tools.forEach((inner, j) => {
          if (inner.type === "function") fn(inner, `tools[${i}].tools[${j}]`, ns.name);
          else hosted.push({ param: OTHER_HOSTED, name: `tools[].${ns.name}.${inner.type}`, kind: "other" });
        });
      } else if (t.type.startsWith("web_search"))
        hosted.push({ param: "tools[]: web_search", name: `tools[].${t.type}`, kind: "web_search" });
      else hosted.push({ param: OTHER_HOSTED, name: `tools[].${t.type}`, kind: "other" });
    });
    if (tools.length > 0 || hosted.length === 0) req.tools = tools;
    if (hosted.length > 0) req.hostedTools = hosted;
  }
  readParams(PARAMS, b, req);
  const untranslatable: string[] = [];
  if (b.text?.verbosity != null) untranslatable.push("text.verbosity");
  if (b.include != null && b.include.length > 0) untranslatable.push("include");
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  const unknown = unknownFields(b, KNOWN);
  if (unknown.length > 0) req.unknown = unknown;
  // What changes the answer and has no translation is refused, never dropped.
  if (b.background === true)
    throw invalid("unsupported_parameter", "'background' is not supported by this model's upstream.", "background");
  if (b.top_logprobs != null)
    throw invalid("unsupported_parameter", "'top_logprobs' is not supported by this model's upstream.", "top_logprobs");
  if (b.service_tier != null && b.service_tier !== "auto" && b.service_tier !== "default") {
    throw invalid("unsupported_parameter", "'service_tier' is not supported by this model's upstream.", "service_tier");
  }
  for (const k of ["prompt", "conversation"]) {
    if ((body as Record<string, unknown>)[k] != null)
      throw invalid("unsupported_parameter", `'${k}' is not supported by this model's upstream.`, k);
  }
  return req;
}

const OTHER_HOSTED = "tools[]: other hosted tools (file_search, code_interpreter, image_generation, mcp, …)";
const namespaceTool = z.looseObject({
  name: z.string().min(1),
  tools: z.array(z.looseObject({ type: z.string() })),
});
const KNOWN: ReadonlySet<string> = new Set([
  ...Object.keys(schema.shape),
  "prompt",
  "conversation",
  // Kept by the gateway's own store or echoed in the answer, not sent: nothing is lost.
  "truncation",
]);

// ---- canonical → Responses upstream ----

function userContentOut(parts: UserPart[]): Record<string, unknown>[] {
  return parts.map((p) =>
    p.type === "text"
      ? { type: "input_text", text: p.text }
      : {
          type: "input_image",
          image_url: p.source.kind === "url" ? p.source.url : dataUrlOf(p.source.mediaType, p.source.data),
          detail: p.source.kind === "url" && p.source.detail ? p.source.detail : "auto",
        },
  );
}

function inputOut(req: CanonicalRequest): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  req.messages.forEach((m, i) => {
    if (m.role === "system") out.push({ role: "system", content: m.text });
    else if (m.role === "user") out.push({ role: "user", content: userContentOut(m.content) });
    else if (m.role === "assistant") {
      // Thinking is not sent back: another vendor's reasoning (or its signature) means nothing to this one.
      let text = "";
      const flush = () => {
        if (text !== "") out.push({ role: "assistant", content: text });
        text = "";
      };
      for (const p of m.content) {
        if (p.type === "text") text += p.text;
        else if (p.type === "tool_call") {
          flush();
          out.push({ type: "function_call", call_id: p.id, name: p.name, arguments: p.arguments });
        }
      }
      flush();
    } else {
      const text = m.content
        .map((p, j) => {
          if (p.type !== "text")
            throw unsupported(`messages[${i}].content[${j}]`, UPSTREAM, "tool results can only hold text");
          return p.text;
        })
        .join("");
      out.push({ type: "function_call_output", call_id: m.toolCallId, output: text });
    }
  });
  return out;
}

export function buildResponsesRequest(
  req: CanonicalRequest,
  upstreamModel: string,
  opts: BuildOptions,
): UpstreamRequest {
  const tr = new Translation(req.protocol ?? "openai", "openai-responses", opts.strict);
  tr.clientParams(req);
  tr.lacks(req, ["topK"]);
  // The Responses API has no stop sequences, and they change where the answer ends.
  if (req.stop && tr.field("stop")) throw unsupported("stop", UPSTREAM);
  tr.lacks(req, ["n", "seed", "presencePenalty", "frequencyPenalty", "logprobs"]);
  const native: Record<string, unknown>[] = [];
  for (const h of req.hostedTools ?? [])
    if (tr.keep(h.param, h.name) && h.kind === "web_search" && native.length === 0) native.push({ type: "web_search" });
  // The provider keeps nothing of a translated call: the client's protocol has no way to refer to it.
  const body: Record<string, unknown> = { model: upstreamModel, input: inputOut(req), store: false };
  if (req.system.length > 0) body.instructions = req.system.join("\n\n");
  if (req.tools) {
    body.tools = req.tools.map((t) => ({
      type: "function",
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.parameters ?? { type: "object", properties: {} },
      strict: false,
    }));
  }
  if (native.length > 0) body.tools = [...((body.tools as unknown[] | undefined) ?? []), ...native];
  // Only to a model configured with reasoning (Translation.reasoning).
  const effort = effortOut(tr.reasoning(req.reasoning, opts.reasoning));
  writeParams(PARAMS, req, body, { reasoning: effort && { effort } });
  if (opts.stream) body.stream = true;
  return { path: "/responses", body, headers: { "content-type": "application/json" }, ...tr.result() };
}

export function formatOut(rf: ResponseFormat): Record<string, unknown> {
  if (rf.type !== "json_schema") return { type: rf.type };
  return { type: "json_schema", ...jsonSchemaFormatOut(rf) };
}
