// Gemini generateContent requests: client body → canonical, canonical → upstream body and path.

import { z } from "zod";
import type {
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
  type Json,
  always,
  budgetOf,
  invalid,
  systemNote,
  toolNameResolver,
  unsupported,
  untranslatableOf,
} from "../shared.ts";
import type { BuildOptions, ClientRoute, UpstreamRequest } from "../types.ts";
import { Translation, unknownFields } from "../translation.ts";
import { type ParamTable, readParams, writeParams } from "../params.ts";
import { parseBody } from "../validate.ts";
import {
  assistantPartsOfGemini,
  geminiFunctionResponse,
  geminiPartOfUser,
  geminiPartsOfAssistant,
  userPartOfGemini,
} from "./parts.ts";

const part = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: z.looseObject({ mimeType: z.string(), data: z.string() }).optional(),
  fileData: z.looseObject({ mimeType: z.string().optional(), fileUri: z.string() }).optional(),
  functionCall: z
    .looseObject({ name: z.string(), args: z.record(z.string(), z.unknown()).optional(), id: z.string().optional() })
    .optional(),
  functionResponse: z
    .looseObject({ name: z.string(), response: z.record(z.string(), z.unknown()), id: z.string().optional() })
    .optional(),
});
const content = z.looseObject({ role: z.enum(["user", "model", "function"]).optional(), parts: z.array(part) });

const functionDeclaration = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  parametersJsonSchema: z.record(z.string(), z.unknown()).optional(),
});

const schema = z.looseObject({
  contents: z.array(content).min(1),
  systemInstruction: z.union([z.string(), z.looseObject({ parts: z.array(part) })]).optional(),
  tools: z.array(z.looseObject({ functionDeclarations: z.array(functionDeclaration).optional() })).optional(),
  toolConfig: z
    .looseObject({
      functionCallingConfig: z
        .looseObject({
          mode: z.enum(["AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"]).optional(),
          allowedFunctionNames: z.array(z.string()).optional(),
        })
        .optional(),
    })
    .optional(),
  generationConfig: z
    .looseObject({
      maxOutputTokens: z.number().int().min(1).optional(),
      temperature: z.number().min(0).max(2).optional(),
      topP: z.number().min(0).max(1).optional(),
      topK: z.number().int().min(1).optional(),
      stopSequences: z.array(z.string()).optional(),
      candidateCount: z.number().int().min(1).optional(),
      responseMimeType: z.string().optional(),
      responseSchema: z.record(z.string(), z.unknown()).optional(),
      responseJsonSchema: z.record(z.string(), z.unknown()).optional(),
      seed: z.number().int().optional(),
      presencePenalty: z.number().optional(),
      frequencyPenalty: z.number().optional(),
      responseLogprobs: z.boolean().optional(),
      thinkingConfig: z
        .looseObject({
          thinkingBudget: z.number().int().min(-1).optional(),
          includeThoughts: z.boolean().optional(),
          thinkingLevel: z.enum(["LOW", "MEDIUM", "HIGH", "MINIMAL", "low", "medium", "high", "minimal"]).optional(),
        })
        .optional(),
    })
    .optional(),
});
type Body = z.infer<typeof schema>;
type GenerationConfig = NonNullable<Body["generationConfig"]>;

// generateContent parameters no other protocol carries that change the answer. safetySettings is not one:
// it tunes Google's own filter, and every other vendor applies its own.
const UNTRANSLATABLE: Record<string, (v: unknown) => boolean> = {
  cachedContent: always,
  safetySettings: (v) => Array.isArray(v) && v.length > 0,
  labels: always,
};
const UNTRANSLATABLE_GENERATION: Record<string, (v: unknown) => boolean> = {
  responseModalities: (v) => Array.isArray(v) && v.some((m) => m !== "TEXT"),
  speechConfig: always,
  imageConfig: always,
  logprobs: always,
};

/** The model may arrive as "models/x" (path segment) or "x". */
export const geminiModelOf = (model: string): string => (model.startsWith("models/") ? model.slice(7) : model);

function messagesFromGemini(contents: Body["contents"]): CanonicalMessage[] {
  const out: CanonicalMessage[] = [];
  // Calls waiting for their functionResponse, per name, oldest first: Gemini matches results by name.
  const pending = new Map<string, string[]>();
  contents.forEach((c, i) => {
    if (c.role === "model") {
      const parts = assistantPartsOfGemini(c.parts);
      for (const p of parts) {
        if (p.type === "tool_call") {
          const q = pending.get(p.name) ?? [];
          q.push(p.id);
          pending.set(p.name, q);
        }
      }
      out.push({ role: "assistant", content: parts });
      return;
    }
    const user: UserPart[] = [];
    c.parts.forEach((p, j) => {
      if (p.functionResponse) {
        const fr = p.functionResponse;
        const id = fr.id ?? pending.get(fr.name)?.shift();
        if (id === undefined) {
          throw invalid(
            "invalid_value",
            `functionResponse '${fr.name}' answers no earlier functionCall.`,
            `contents[${i}].parts[${j}].functionResponse`,
          );
        }
        out.push({
          role: "tool",
          toolCallId: id,
          name: fr.name,
          content: [{ type: "text", text: JSON.stringify(fr.response) }],
        });
        return;
      }
      const up = userPartOfGemini(p);
      if (!up) throw invalid("invalid_value", "This part type is not supported.", `contents[${i}].parts[${j}]`);
      user.push(up);
    });
    if (user.length > 0 || c.parts.length === 0) out.push({ role: "user", content: user });
  });
  return out;
}

/** Gemini's responseSchema uses OpenAPI's upper-case type names; JSON Schema wants lower case. */
function lowerTypes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(lowerTypes);
  if (v === null || typeof v !== "object") return v;
  const out: Json = {};
  for (const [k, val] of Object.entries(v as Json))
    out[k] = k === "type" && typeof val === "string" ? val.toLowerCase() : lowerTypes(val);
  return out;
}

function reasoningOf(tc: NonNullable<GenerationConfig["thinkingConfig"]>): ReasoningConfig | undefined {
  if (tc.thinkingLevel !== undefined)
    return { enabled: true, effort: tc.thinkingLevel.toLowerCase() as "minimal" | "low" | "medium" | "high" };
  if (tc.thinkingBudget === undefined) return tc.includeThoughts ? { enabled: true } : undefined;
  if (tc.thinkingBudget === 0) return { enabled: false };
  if (tc.thinkingBudget === -1) return { enabled: true };
  return { enabled: true, budgetTokens: tc.thinkingBudget };
}

/**
 * generationConfig's parameters (params.ts): read from a client's, written to an upstream's. One candidate and no
 * log-probabilities are all a translation gives (Translation.lacks refuses more), so those are not written; the
 * builder writes the response format and thinking, which take more than one field.
 */
const PARAMS: ParamTable<GenerationConfig> = {
  maxOutputTokens: "maxOutputTokens",
  temperature: "temperature",
  topP: "topP",
  topK: "topK",
  stop: { name: "stopSequences", read: (g) => (g.stopSequences?.length ? g.stopSequences : undefined) },
  n: { name: "candidateCount", write: false },
  seed: "seed",
  presencePenalty: "presencePenalty",
  frequencyPenalty: "frequencyPenalty",
  logprobs: { name: "responseLogprobs", write: false },
  responseFormat: { name: "responseMimeType", read: responseFormatOf, write: false },
  reasoning: { name: "thinkingConfig", read: (g) => g.thinkingConfig && reasoningOf(g.thinkingConfig), write: false },
};

export function parseGeminiRequest(body: unknown, route: ClientRoute = {}): CanonicalRequest {
  if (!route.model)
    throw invalid(
      "missing_required_parameter",
      "The model is part of the URL: /v1beta/models/{model}:generateContent.",
      "model",
    );
  const b = parseBody(schema, body);
  const si = b.systemInstruction;
  const system =
    si === undefined
      ? []
      : typeof si === "string"
        ? [si]
        : si.parts.flatMap((p) => (typeof p.text === "string" && p.text !== "" ? [p.text] : []));
  const req: CanonicalRequest = {
    model: geminiModelOf(route.model),
    system,
    messages: messagesFromGemini(b.contents),
    stream: route.stream === true,
    protocol: "gemini",
  };

  // Google's hosted tools (googleSearch, urlContext, codeExecution …) sit beside functionDeclarations: the
  // translation table maps them to the upstream's native tool or removes and names them.
  const hosted: HostedTool[] = [];
  const decls = (b.tools ?? []).flatMap((t) => {
    for (const k of Object.keys(t)) if (k !== "functionDeclarations") hosted.push(hostedOfGemini(k));
    return t.functionDeclarations ?? [];
  });
  if (hosted.length > 0) req.hostedTools = hosted;
  let tools: ToolDefinition[] = decls.map((d) => {
    const t: ToolDefinition = { name: d.name };
    if (d.description !== undefined) t.description = d.description;
    const params = d.parametersJsonSchema ?? (d.parameters ? (lowerTypes(d.parameters) as Json) : undefined);
    if (params) t.parameters = params;
    return t;
  });

  const fcc = b.toolConfig?.functionCallingConfig;
  if (fcc?.mode) {
    let choice: ToolChoice = { type: "auto" };
    if (fcc.mode === "NONE") choice = { type: "none" };
    else if (fcc.mode === "ANY") {
      const allowed = fcc.allowedFunctionNames ?? [];
      if (allowed.length === 1 && allowed[0] !== undefined) choice = { type: "tool", name: allowed[0] };
      else {
        choice = { type: "required" };
        // "Any of these": the other protocols express it by offering only these tools.
        if (allowed.length > 1) tools = tools.filter((t) => allowed.includes(t.name));
      }
    }
    req.toolChoice = choice;
  }
  if (tools.length > 0) req.tools = tools;

  const untranslatable = [
    ...untranslatableOf(b, UNTRANSLATABLE),
    ...untranslatableOf(b.generationConfig ?? {}, UNTRANSLATABLE_GENERATION, "generationConfig."),
  ];
  if (untranslatable.length > 0) req.untranslatable = untranslatable;
  const unknown = unknownFields(b, KNOWN);
  if (unknown.length > 0) req.unknown = unknown;
  if (b.generationConfig) readParams(PARAMS, b.generationConfig, req);
  return req;
}

const KNOWN: ReadonlySet<string> = new Set([...Object.keys(schema.shape), ...Object.keys(UNTRANSLATABLE)]);

/** A Gemini tool entry other than functionDeclarations, as a hosted tool of the translation table. */
function hostedOfGemini(key: string): HostedTool {
  const name = `tools[].${key}`;
  if (key === "googleSearch" || key === "googleSearchRetrieval")
    return { param: "tools[].googleSearch", name, kind: "web_search" };
  if (key === "urlContext") return { param: "tools[].urlContext", name, kind: "web_fetch" };
  if (key === "codeExecution") return { param: "tools[].codeExecution", name, kind: "code_execution" };
  return { param: name, name, kind: "other" };
}

/** Gemini's native tools for the hosted tools that have one. */
const NATIVE_TOOL: Partial<Record<HostedTool["kind"], Json>> = {
  web_search: { googleSearch: {} },
  web_fetch: { urlContext: {} },
  code_execution: { codeExecution: {} },
};

function responseFormatOf(g: GenerationConfig): ResponseFormat | undefined {
  const schema = g.responseJsonSchema ?? (g.responseSchema ? (lowerTypes(g.responseSchema) as Json) : undefined);
  if (g.responseMimeType === "application/json") {
    return schema ? { type: "json_schema", name: "response", schema } : { type: "json_object" };
  }
  if (g.responseMimeType === undefined || g.responseMimeType === "text/plain") return undefined;
  throw invalid(
    "invalid_value",
    `responseMimeType '${g.responseMimeType}' is not supported.`,
    "generationConfig.responseMimeType",
  );
}

// ---- canonical → Gemini upstream ----

function contentsOut(req: CanonicalRequest): Json[] {
  const out: { role: "user" | "model"; parts: Json[] }[] = [];
  const names = toolNameResolver();
  const turn = (role: "user" | "model"): Json[] => {
    const last = out[out.length - 1];
    if (last && last.role === role) return last.parts;
    const fresh = { role, parts: [] as Json[] };
    out.push(fresh);
    return fresh.parts;
  };
  req.messages.forEach((m, i) => {
    if (m.role === "system") turn("user").push({ text: systemNote(m.text) });
    else if (m.role === "user") turn("user").push(...m.content.map(geminiPartOfUser));
    else if (m.role === "assistant") {
      for (const p of m.content) if (p.type === "tool_call") names.noteCall(p.id, p.name);
      const parts = geminiPartsOfAssistant(m.content, `messages[${i}].tool_calls`, true);
      if (parts.length > 0) turn("model").push(...parts);
    } else {
      const name = names.nameOf(m);
      if (name === undefined) {
        throw invalid(
          "invalid_value",
          `Tool result '${m.toolCallId}' answers no earlier tool call.`,
          `messages[${i}].tool_call_id`,
        );
      }
      if (m.content.some((p) => p.type !== "text"))
        throw unsupported(`messages[${i}].content`, "Gemini", "tool results can only hold text");
      turn("user").push(geminiFunctionResponse(m, name));
    }
  });
  return out;
}

function toolConfigOut(tc: ToolChoice): Json {
  switch (tc.type) {
    case "auto":
      return { functionCallingConfig: { mode: "AUTO" } };
    case "none":
      return { functionCallingConfig: { mode: "NONE" } };
    case "required":
      return { functionCallingConfig: { mode: "ANY" } };
    case "tool":
      return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [tc.name] } };
  }
}

function thinkingConfigOut(r: ReasoningConfig): Json {
  if (!r.enabled) return { thinkingBudget: 0 };
  // -1 is Gemini's dynamic budget: the model decides, as the client asked.
  return { thinkingBudget: budgetOf(r) ?? -1, includeThoughts: true };
}

export function buildGeminiRequest(req: CanonicalRequest, upstreamModel: string, opts: BuildOptions): UpstreamRequest {
  const tr = new Translation(req.protocol ?? "openai", "gemini", opts.strict);
  tr.clientParams(req);
  tr.lacks(req, ["n", "logprobs"]);
  const native: Json[] = [];
  for (const h of req.hostedTools ?? []) {
    const n = NATIVE_TOOL[h.kind];
    if (tr.keep(h.param, h.name) && n && !native.some((t) => Object.keys(t)[0] === Object.keys(n)[0])) native.push(n);
  }
  // Safe in a URL path: Gemini model ids are [a-z0-9.-]; anything else is encoded rather than trusted.
  const model = encodeURIComponent(upstreamModel);
  const body: Json = { contents: contentsOut(req) };
  if (req.system.length > 0) body.systemInstruction = { parts: req.system.map((text) => ({ text })) };
  if (req.tools && req.tools.length > 0) {
    // parametersJsonSchema takes full JSON Schema; `parameters` is an OpenAPI subset that rejects e.g.
    // additionalProperties, which OpenAI strict-mode schemas always carry.
    body.tools = [
      {
        functionDeclarations: req.tools.map((t) => {
          const d: Json = { name: t.name };
          if (t.description !== undefined) d.description = t.description;
          if (t.parameters !== undefined) d.parametersJsonSchema = t.parameters;
          return d;
        }),
      },
    ];
  }
  if (native.length > 0) body.tools = [...((body.tools as Json[] | undefined) ?? []), ...native];
  if (req.toolChoice) body.toolConfig = toolConfigOut(req.toolChoice);
  const gc: Json = {};
  writeParams(PARAMS, req, gc);
  if (req.responseFormat && req.responseFormat.type !== "text") {
    gc.responseMimeType = "application/json";
    // responseJsonSchema for the same reason as parametersJsonSchema above.
    if (req.responseFormat.type === "json_schema") gc.responseJsonSchema = req.responseFormat.schema;
  }
  // Only to a model configured with reasoning (Translation.reasoning).
  const reasoning = tr.reasoning(req.reasoning, opts.reasoning);
  if (reasoning) gc.thinkingConfig = thinkingConfigOut(reasoning);
  if (Object.keys(gc).length > 0) body.generationConfig = gc;
  const path = opts.stream ? `/models/${model}:streamGenerateContent?alt=sse` : `/models/${model}:generateContent`;
  return { path, body, headers: { "content-type": "application/json" }, ...tr.result() };
}
