import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { ApiError, GoogleGenAI, type Content, type GenerateContentConfig, type Part } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";
import { admin, eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";
import { type Client, compat } from "../helpers/compat.ts";

// Conformance of issue "Three protocols, any to any": every official SDK as the client (openai, @anthropic-ai/sdk,
// @google/genai) against every upstream protocol (mock OpenAI, Anthropic and Gemini upstreams speaking the real
// wire formats), streaming and not, through one embedded server. Each client × upstream pair checks the text,
// the finish reason in the client's vocabulary, exact usage per PROTOCOLS.md's translation table, the usage-log
// row (tokens and cost in micro-units computed by hand below), a tool-call round trip, a reasoning model and a
// mid-stream upstream error. The client-protocol surfaces (errors, model lists, count_tokens, Gemini's JSON-array
// streaming and ?key=) follow.

type Proto = "openai" | "anthropic" | "gemini";
const PROTOS: Proto[] = ["openai", "anthropic", "gemini"];
/** Each protocol's official SDK, as the compatibility matrix names it. */
const SDK: Record<Proto, Client> = { openai: "openai-sdk", anthropic: "anthropic-sdk", gemini: "genai-sdk" };

// ---------------------------------------------------------------------------------------------------------------
// Models. conf-* rewrite the model name (translation, also for a same-protocol client); pass-* keep it (a
// same-protocol client gets the upstream's bytes: passthrough); think-* are reasoning models.

interface Target {
  model: string;
  upstream: Proto;
  upstreamModel: string;
}
const conf: Record<Proto, Target> = {
  openai: { model: "conf-openai-2025-01-01", upstream: "openai", upstreamModel: "gpt-mock-4o" },
  anthropic: { model: "conf-anthropic-2025-01-01", upstream: "anthropic", upstreamModel: "claude-mock-sonnet" },
  gemini: { model: "conf-gemini-2025-01-01", upstream: "gemini", upstreamModel: "gemini-mock-flash" },
};
const pass: Record<Proto, Target> = {
  openai: { model: "pass-openai-2025-01-01", upstream: "openai", upstreamModel: "pass-openai-2025-01-01" },
  anthropic: { model: "pass-anthropic-2025-01-01", upstream: "anthropic", upstreamModel: "pass-anthropic-2025-01-01" },
  gemini: { model: "pass-gemini-2025-01-01", upstream: "gemini", upstreamModel: "pass-gemini-2025-01-01" },
};
const think: Record<Proto, Target> = {
  openai: { model: "think-openai-2025-01-01", upstream: "openai", upstreamModel: "o-mock-mini" },
  anthropic: { model: "think-anthropic-2025-01-01", upstream: "anthropic", upstreamModel: "claude-mock-thinker" },
  gemini: { model: "think-gemini-2025-01-01", upstream: "gemini", upstreamModel: "gemini-mock-pro" },
};
const ALL_MODELS = [...Object.values(conf), ...Object.values(pass), ...Object.values(think)].map((t) => t.model);

// Prices per 1M tokens (list prices in the config file; conf-anthropic also gets an account contract that wins).
const PRICE_YAML: Record<string, string> = {
  "conf-openai-2025-01-01": "{ input: 2.5, output: 10, cachedInput: 1.25 }",
  "conf-anthropic-2025-01-01": "{ input: 3, output: 15, cachedInput: 0.3 }", // contract: 2 / 8 / cached 0.2
  "conf-gemini-2025-01-01": "{ input: 0.3, output: 2.5 }", // no cached price: cached tokens at the input price
  "pass-openai-2025-01-01": "{ input: 1, output: 2 }",
  "pass-anthropic-2025-01-01": "{ input: 1, output: 2 }",
  "pass-gemini-2025-01-01": "{ input: 1, output: 2 }",
  "think-openai-2025-01-01": "{ input: 1, output: 4, cachedInput: 0.5 }",
  "think-anthropic-2025-01-01": "{ input: 1, output: 4, cachedInput: 0.5 }",
  "think-gemini-2025-01-01": "{ input: 1, output: 4, cachedInput: 0.5 }",
};

// Scripted usage (what the upstream reports; each mock renders it in its vendor's terms) and the cost of each
// call in micro-units, worked out by hand: a price of X units per 1M tokens is X micro-units per token, and the
// sum is rounded half up once.
const BASIC_USAGE = { promptTokens: 1201, cachedTokens: 200, completionTokens: 300 };
const BASIC_COST: Record<string, string> = {
  "conf-openai-2025-01-01": "5753", // 1001 × 2.5 + 200 × 1.25 + 300 × 10 = 2502.5 + 250 + 3000 = 5752.5 → 5753
  "conf-anthropic-2025-01-01": "4442", // contract: 1001 × 2 + 200 × 0.2 + 300 × 8 = 2002 + 40 + 2400
  "conf-gemini-2025-01-01": "1110", // 1201 × 0.3 + 300 × 2.5 = 360.3 + 750 = 1110.3 → 1110
  "pass-openai-2025-01-01": "1801", // 1201 × 1 + 300 × 2
  "pass-anthropic-2025-01-01": "1801",
  "pass-gemini-2025-01-01": "1801",
};
const TOOL_USAGE = [
  { promptTokens: 80, completionTokens: 20 },
  { promptTokens: 120, completionTokens: 12 },
];
const TOOL_COST: Record<string, [string, string]> = {
  "conf-openai-2025-01-01": ["400", "420"], // 80 × 2.5 + 20 × 10; 120 × 2.5 + 12 × 10
  "conf-anthropic-2025-01-01": ["320", "336"], // 80 × 2 + 20 × 8; 120 × 2 + 12 × 8
  "conf-gemini-2025-01-01": ["74", "66"], // 80 × 0.3 + 20 × 2.5 = 24 + 50; 120 × 0.3 + 12 × 2.5 = 36 + 30
  "pass-openai-2025-01-01": ["120", "144"], // 80 + 40; 120 + 24
  "pass-anthropic-2025-01-01": ["120", "144"],
  "pass-gemini-2025-01-01": ["120", "144"],
};
const THINK_USAGE = { promptTokens: 1201, cachedTokens: 200, completionTokens: 300, reasoningTokens: 150 };
const THINK_COST = "2901"; // 1001 × 1 + 200 × 0.5 + (300 + 150) × 4 = 1001 + 100 + 1800

// ---------------------------------------------------------------------------------------------------------------
// Fixture: three mock upstreams, one embedded server, one account with a key.

let mocks: Record<Proto, MockUpstream>;
let server: Proc;
let base: string;
let env: NodeJS.ProcessEnv;
let dataDir: string;
let apiKey: string;
let adminToken: string;

beforeAll(async () => {
  const [o, a, g] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, anthropic: a, gemini: g };
  dataDir = mkdtempSync(join(tmpdir(), "mg-conformance-"));
  const config = join(dataDir, "gateway.yaml");
  const upstreams = PROTOS.map(
    (p) => `  - name: mock-${p}\n    protocol: ${p}\n    baseUrl: ${mocks[p].url}\n    apiKey: \${MOCK_UPSTREAM_KEY}\n`,
  ).join("");
  const models = [...Object.values(conf), ...Object.values(pass), ...Object.values(think)]
    .map(
      (t) =>
        `  - id: ${t.model}\n    reasoning: ${t.model.startsWith("think-")}\n    price: ${PRICE_YAML[t.model]}\n    routes: [{ upstream: mock-${t.upstream}, model: ${t.upstreamModel} }]\n`,
    )
    .join("");
  writeFileSync(config, `upstreams:\n${upstreams}models:\n${models}`);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY,
    DATABASE_URL: "",
    REDIS_URL: "",
  };
  server = startTs("control-plane/src/main/embedded.ts", env);
  await waitForHttp(`${base}/readyz`, server, 120_000);
  adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();

  expect((await admin(env, "account", "create", "--name", "conf", "--balance", "100")).code).toBe(0);
  const [contract, created] = await Promise.all([
    admin(
      env,
      "contract",
      "set",
      "--account",
      "conf",
      "--model",
      conf.anthropic.model,
      "--input",
      "2",
      "--output",
      "8",
      "--cached-input",
      "0.2",
    ),
    admin(env, "key", "create", "--account", "conf", "--name", "conformance"),
  ]);
  expect(contract.code).toBe(0);
  apiKey = (created.json as { key: string }).key;
  // The contract reaches the data plane through a snapshot: wait until a call is billed at it.
  mocks.anthropic.reply({ text: ["ok"], usage: { promptTokens: 1_000_000, completionTokens: 0 } });
  const probe = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: conf.anthropic.model, messages: [{ role: "user", content: "x" }] }),
  });
  expect(probe.status).toBe(200);
  const probeRow = await usageRow(probe.headers.get("x-gateway-request-id")!);
  expect(probeRow.costMicro).toBe("2000000"); // 1M prompt tokens at the contract's 2 (not the list price 3)
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await Promise.all(PROTOS.map((p) => mocks?.[p]?.close()));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

interface UsageRow {
  requestId: string;
  model: string;
  protocol: string;
  status: number;
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
  costMicro: string;
}

/** The usage-log row of one call, read as `modelgate-admin usage list` reads it (the server's admin endpoint). */
async function usageRow(requestId: string): Promise<UsageRow> {
  const list = async () => {
    const res = await fetch(`${base}/api/admin`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ command: "usage list", args: { account: "conf", limit: "50" } }),
    });
    return ((await res.json()) as { result: UsageRow[] }).result;
  };
  const rows = await eventually(list, (r) => r.some((x) => x.requestId === requestId));
  return rows.find((x) => x.requestId === requestId)!;
}

// ---------------------------------------------------------------------------------------------------------------
// Client drivers: one per official SDK, the same questions asked in each protocol's own terms.

const WEATHER_SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const WEATHER_RESULT = { temperature_c: 18, sky: "clear" };

interface OutCall {
  id?: string | undefined;
  name: string;
  args: Record<string, unknown>;
  signature?: string | undefined;
}

interface Ask {
  model: string;
  stream: boolean;
  reasoning?: boolean;
  tools?: boolean;
  /** the conversation continues: the model called this tool, here is its result */
  followUp?: OutCall;
  /** the reasoning that preceded the call, sent back as the vendor requires (Anthropic: signed thinking block) */
  followUpThinking?: { text: string; signature: string };
  /** another API key than the account's */
  key?: string;
}

interface Outcome {
  requestId: string | null;
  text: string;
  thinking: string;
  /** Anthropic's signature of the thinking block */
  thinkingSignature?: string;
  calls: OutCall[];
  finish: string | null;
  usage: unknown;
}

/** Canonical usage (OpenAI's definitions: prompt includes cached, completion includes reasoning). */
interface Tokens {
  prompt: number;
  cached: number;
  completion: number;
  reasoning: number;
}

interface Driver {
  name: Proto;
  finishStop: string;
  finishTool: string;
  finishLength: string;
  finishFilter: string;
  ask(a: Ask, out: Outcome): Promise<void>;
  /** the usage numbers the client sees, flattened */
  usage(raw: unknown): Record<string, number>;
  /** what the translation table says the client must see */
  expectedUsage(t: Tokens): Record<string, number>;
  /** the SDK's error class for an HTTP error or an error event */
  isApiError(err: unknown): boolean;
  /** the HTTP status an SDK error carries */
  statusOf(err: unknown): number | undefined;
}

const PROMPT = "What is the capital of France?";

const openaiDriver: Driver = {
  name: "openai",
  finishStop: "stop",
  finishTool: "tool_calls",
  finishLength: "length",
  finishFilter: "content_filter",
  async ask(a, out) {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: a.key ?? apiKey, maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: PROMPT }];
    if (a.followUp) {
      const c = a.followUp;
      messages.push(
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: c.id!, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }],
        },
        { role: "tool", tool_call_id: c.id!, content: JSON.stringify(WEATHER_RESULT) },
      );
    }
    const params = {
      model: a.model,
      messages,
      ...(a.tools
        ? {
            tools: [
              {
                type: "function" as const,
                function: { name: "get_weather", description: "Current weather in a city", parameters: WEATHER_SCHEMA },
              },
            ],
          }
        : {}),
      ...(a.reasoning ? { reasoning_effort: "low" as const } : {}),
    };
    if (!a.stream) {
      const { data, response } = await client.chat.completions.create(params).withResponse();
      out.requestId = response.headers.get("x-gateway-request-id");
      const m = data.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
      out.text = m.content ?? "";
      out.thinking = m.reasoning_content ?? "";
      out.calls = (m.tool_calls ?? []).map((t) => {
        const fn = (t as OpenAI.ChatCompletionMessageFunctionToolCall).function;
        return { id: t.id, name: fn.name, args: JSON.parse(fn.arguments) as Record<string, unknown> };
      });
      out.finish = data.choices[0]!.finish_reason;
      out.usage = data.usage;
      expect(data.model).toBe(a.model);
      return;
    }
    const { data: stream, response } = await client.chat.completions
      .create({ ...params, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    out.requestId = response.headers.get("x-gateway-request-id");
    const calls: { id?: string; name: string; args: string }[] = [];
    for await (const chunk of stream) {
      expect(chunk.model).toBe(a.model);
      if (chunk.usage) out.usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      const d = choice.delta as OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string };
      out.text += d.content ?? "";
      out.thinking += d.reasoning_content ?? "";
      for (const t of d.tool_calls ?? []) {
        const c = (calls[t.index] ??= { name: "", args: "" });
        if (t.id) c.id = t.id;
        if (t.function?.name) c.name = t.function.name;
        c.args += t.function?.arguments ?? "";
      }
      if (choice.finish_reason) out.finish = choice.finish_reason;
    }
    out.calls = calls.map((c) => ({ id: c.id, name: c.name, args: JSON.parse(c.args) as Record<string, unknown> }));
  },
  usage(raw) {
    const u = raw as OpenAI.CompletionUsage;
    return {
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      total_tokens: u.total_tokens,
      cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0,
      reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0,
    };
  },
  expectedUsage: (t) => ({
    prompt_tokens: t.prompt,
    completion_tokens: t.completion,
    total_tokens: t.prompt + t.completion,
    cached_tokens: t.cached,
    reasoning_tokens: t.reasoning,
  }),
  isApiError: (err) => err instanceof OpenAI.APIError,
  statusOf: (err) => (err instanceof OpenAI.APIError ? err.status : undefined),
};

const anthropicDriver: Driver = {
  name: "anthropic",
  finishStop: "end_turn",
  finishTool: "tool_use",
  finishLength: "max_tokens",
  finishFilter: "refusal",
  async ask(a, out) {
    const client = new Anthropic({ baseURL: base, apiKey: a.key ?? apiKey, maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: PROMPT }];
    if (a.followUp) {
      const c = a.followUp;
      messages.push(
        {
          role: "assistant",
          content: [
            ...(a.followUpThinking
              ? [
                  {
                    type: "thinking" as const,
                    thinking: a.followUpThinking.text,
                    signature: a.followUpThinking.signature,
                  },
                ]
              : []),
            { type: "tool_use", id: c.id!, name: c.name, input: c.args },
          ],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: c.id!, content: JSON.stringify(WEATHER_RESULT) }],
        },
      );
    }
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: a.model,
      max_tokens: a.reasoning ? 2048 : 1024,
      messages,
      ...(a.tools
        ? {
            tools: [
              {
                name: "get_weather",
                description: "Current weather in a city",
                input_schema: WEATHER_SCHEMA as Anthropic.Tool.InputSchema,
              },
            ],
          }
        : {}),
      ...(a.reasoning ? { thinking: { type: "enabled" as const, budget_tokens: 1024 } } : {}),
    };
    let msg: Anthropic.Message;
    if (!a.stream) {
      const { data, response } = await client.messages.create(params).withResponse();
      out.requestId = response.headers.get("x-gateway-request-id");
      msg = data;
    } else {
      const stream = client.messages.stream(params);
      stream.on("text", (t) => void (out.text += t));
      stream.on("thinking", (t) => void (out.thinking += t));
      const { response } = await stream.withResponse();
      out.requestId = response.headers.get("x-gateway-request-id");
      msg = await stream.finalMessage();
      out.text = "";
      out.thinking = "";
    }
    expect(msg.model).toBe(a.model);
    for (const b of msg.content) {
      if (b.type === "text") out.text += b.text;
      else if (b.type === "thinking") {
        out.thinking += b.thinking;
        out.thinkingSignature = b.signature;
      } else if (b.type === "tool_use")
        out.calls.push({ id: b.id, name: b.name, args: b.input as Record<string, unknown> });
    }
    out.finish = msg.stop_reason;
    out.usage = msg.usage;
  },
  usage(raw) {
    const u = raw as Anthropic.Usage;
    return {
      input_tokens: u.input_tokens,
      output_tokens: u.output_tokens,
      cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
      cache_creation_input_tokens: u.cache_creation_input_tokens ?? 0,
    };
  },
  // input_tokens excludes cache reads, so cached tokens are never counted twice; thinking is inside output_tokens.
  expectedUsage: (t) => ({
    input_tokens: t.prompt - t.cached,
    output_tokens: t.completion,
    cache_read_input_tokens: t.cached,
    cache_creation_input_tokens: 0,
  }),
  isApiError: (err) => err instanceof Anthropic.APIError,
  statusOf: (err) => (err instanceof Anthropic.APIError ? err.status : undefined),
};

const geminiDriver: Driver = {
  name: "gemini",
  finishStop: "STOP",
  finishTool: "STOP",
  finishLength: "MAX_TOKENS",
  finishFilter: "SAFETY",
  async ask(a, out) {
    const ai = new GoogleGenAI({ apiKey: a.key ?? apiKey, httpOptions: { baseUrl: base, apiVersion: "v1beta" } });
    const contents: Content[] = [{ role: "user", parts: [{ text: PROMPT }] }];
    if (a.followUp) {
      const c = a.followUp;
      contents.push(
        {
          role: "model",
          parts: [
            { functionCall: { name: c.name, args: c.args }, ...(c.signature ? { thoughtSignature: c.signature } : {}) },
          ],
        },
        { role: "user", parts: [{ functionResponse: { name: c.name, response: WEATHER_RESULT } }] },
      );
    }
    const config: GenerateContentConfig = {
      ...(a.tools
        ? {
            tools: [
              {
                functionDeclarations: [
                  {
                    name: "get_weather",
                    description: "Current weather in a city",
                    parametersJsonSchema: WEATHER_SCHEMA,
                  },
                ],
              },
            ],
          }
        : {}),
      ...(a.reasoning ? { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } } : {}),
    };
    const take = (parts: Part[] | undefined) => {
      for (const p of parts ?? []) {
        if (p.functionCall)
          out.calls.push({
            id: p.functionCall.id,
            name: p.functionCall.name ?? "",
            args: p.functionCall.args ?? {},
            signature: p.thoughtSignature,
          });
        else if (typeof p.text === "string") {
          if (p.thought) out.thinking += p.text;
          else out.text += p.text;
        }
      }
    };
    if (!a.stream) {
      const r = await ai.models.generateContent({ model: a.model, contents, config });
      out.requestId = r.sdkHttpResponse?.headers?.["x-gateway-request-id"] ?? null;
      expect(r.modelVersion).toBe(a.model);
      take(r.candidates?.[0]?.content?.parts);
      out.finish = r.candidates?.[0]?.finishReason ?? null;
      out.usage = r.usageMetadata;
      return;
    }
    for await (const chunk of await ai.models.generateContentStream({ model: a.model, contents, config })) {
      out.requestId ??= chunk.sdkHttpResponse?.headers?.["x-gateway-request-id"] ?? null;
      take(chunk.candidates?.[0]?.content?.parts);
      if (chunk.candidates?.[0]?.finishReason) out.finish = chunk.candidates[0].finishReason;
      if (chunk.usageMetadata) out.usage = chunk.usageMetadata;
    }
  },
  usage(raw) {
    const u = raw as {
      promptTokenCount?: number;
      candidatesTokenCount?: number;
      totalTokenCount?: number;
      cachedContentTokenCount?: number;
      thoughtsTokenCount?: number;
    };
    return {
      promptTokenCount: u.promptTokenCount ?? 0,
      candidatesTokenCount: u.candidatesTokenCount ?? 0,
      totalTokenCount: u.totalTokenCount ?? 0,
      cachedContentTokenCount: u.cachedContentTokenCount ?? 0,
      thoughtsTokenCount: u.thoughtsTokenCount ?? 0,
    };
  },
  // candidatesTokenCount excludes thoughts, which Gemini reports apart.
  expectedUsage: (t) => ({
    promptTokenCount: t.prompt,
    candidatesTokenCount: t.completion - t.reasoning,
    totalTokenCount: t.prompt + t.completion,
    cachedContentTokenCount: t.cached,
    thoughtsTokenCount: t.reasoning,
  }),
  isApiError: (err) => err instanceof ApiError,
  statusOf: (err) => (err instanceof ApiError ? err.status : undefined),
};

const drivers: Driver[] = [openaiDriver, anthropicDriver, geminiDriver];

/** Runs one exchange; an SDK error is returned with whatever arrived before it. */
async function attempt(d: Driver, a: Ask): Promise<{ out: Outcome; error: unknown }> {
  const out: Outcome = { requestId: null, text: "", thinking: "", calls: [], finish: null, usage: undefined };
  try {
    await d.ask(a, out);
    return { out, error: null };
  } catch (error) {
    return { out, error };
  }
}

async function exchange(d: Driver, a: Ask): Promise<Outcome> {
  const { out, error } = await attempt(d, a);
  if (error) throw error;
  return out;
}

/** Canonical tokens as the upstream reported them (Anthropic has no separate count of thinking tokens). */
const tokensOf = (
  upstream: Proto,
  u: { promptTokens: number; cachedTokens?: number; completionTokens: number; reasoningTokens?: number },
): Tokens => ({
  prompt: u.promptTokens,
  cached: u.cachedTokens ?? 0,
  completion: u.completionTokens + (u.reasoningTokens ?? 0),
  reasoning: upstream === "anthropic" ? 0 : (u.reasoningTokens ?? 0),
});

async function expectLogged(d: Driver, out: Outcome, model: string, t: Tokens, costMicro: string): Promise<void> {
  expect(out.requestId).toMatch(/^req_[0-9a-f]{24}$/);
  const row = await usageRow(out.requestId!);
  expect(row).toMatchObject({
    model,
    protocol: d.name,
    status: 200,
    promptTokens: t.prompt,
    completionTokens: t.completion,
    reasoningTokens: t.reasoning,
    cachedTokens: t.cached,
    costMicro,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// What the upstream received, read in its own protocol.

type Body = Record<string, unknown>;
const lastRequest = (p: Proto) => mocks[p].requests.at(-1)!;

/** The model the upstream was asked for (Gemini names it in the path). */
function upstreamModelOf(p: Proto): string {
  const r = lastRequest(p);
  if (p === "gemini") return decodeURIComponent(/\/models\/([^/:]+):/.exec(r.url)?.[1] ?? "");
  return String((r.body as Body).model);
}

function expectUpstreamCall(t: Target, stream: boolean): void {
  const r = lastRequest(t.upstream);
  expect(upstreamModelOf(t.upstream)).toBe(t.upstreamModel);
  // The upstream credential, never the client's key.
  const seenKey =
    t.upstream === "openai"
      ? r.headers.authorization
      : t.upstream === "anthropic"
        ? (r.headers["x-api-key"] ?? r.headers.authorization)
        : r.headers["x-goog-api-key"];
  expect(String(seenKey)).toContain(DEFAULT_MOCK_KEY);
  expect(JSON.stringify(r.headers)).not.toContain(apiKey);
  if (t.upstream === "gemini") expect(r.url.includes(":streamGenerateContent?alt=sse")).toBe(stream);
  else expect((r.body as Body).stream === true).toBe(stream);
}

/** The tool call and its result as the upstream received them: same call, result linked to it. */
function expectLinkedToolResult(p: Proto): void {
  const body = lastRequest(p).body as Body;
  if (p === "openai") {
    const messages = body.messages as Body[];
    const assistant = messages.find((m) => m.role === "assistant" && Array.isArray(m.tool_calls))!;
    const call = (assistant.tool_calls as { id: string; function: { name: string; arguments: string } }[])[0]!;
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    const tool = messages.find((m) => m.role === "tool")!;
    expect(tool.tool_call_id).toBe(call.id);
    expect(JSON.parse(String(tool.content))).toEqual(WEATHER_RESULT);
    expect((body.tools as Body[])[0]).toMatchObject({ type: "function", function: { name: "get_weather" } });
  } else if (p === "anthropic") {
    const messages = body.messages as { role: string; content: Body[] | string }[];
    const use = messages
      .flatMap((m) => (m.role === "assistant" && Array.isArray(m.content) ? m.content : []))
      .find((b) => b.type === "tool_use")!;
    expect(use).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
    const result = messages
      .flatMap((m) => (m.role === "user" && Array.isArray(m.content) ? m.content : []))
      .find((b) => b.type === "tool_result")!;
    expect(result.tool_use_id).toBe(use.id);
    const content =
      typeof result.content === "string"
        ? result.content
        : (result.content as { text: string }[]).map((c) => c.text).join("");
    expect(JSON.parse(content)).toEqual(WEATHER_RESULT);
    expect((body.tools as Body[])[0]).toMatchObject({ name: "get_weather", input_schema: WEATHER_SCHEMA });
  } else {
    const contents = body.contents as { role: string; parts: Body[] }[];
    const call = contents.flatMap((c) => (c.role === "model" ? c.parts : [])).find((x) => x.functionCall)!;
    expect(call.functionCall).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    const answer = contents.flatMap((c) => (c.role === "user" ? c.parts : [])).find((x) => x.functionResponse)!;
    expect(answer.functionResponse).toMatchObject({ name: "get_weather", response: WEATHER_RESULT });
    // the result comes after the call
    expect(contents.findIndex((c) => c.parts.includes(answer))).toBeGreaterThan(
      contents.findIndex((c) => c.parts.includes(call)),
    );
    const decl = ((body.tools as Body[])[0]!.functionDeclarations as Body[])[0]!;
    expect(decl.name).toBe("get_weather");
  }
}

/** The reasoning request as the upstream received it (budget 1024 = effort "low" on every protocol). */
function expectReasoningAsked(p: Proto): void {
  const body = lastRequest(p).body as Body;
  if (p === "openai") expect(body.reasoning_effort).toBe("low");
  else if (p === "anthropic") expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
  else
    expect((body.generationConfig as Body).thinkingConfig).toMatchObject({
      thinkingBudget: 1024,
      includeThoughts: true,
    });
}

// ---------------------------------------------------------------------------------------------------------------
// The matrix: 3 clients × 3 upstreams, plus the same-protocol passthrough route, streaming and not.

const MODES = [false, true] as const;
const modeName = (stream: boolean) => (stream ? "streaming" : "non-streaming");

for (const d of drivers) {
  const targets: { label: string; t: Target }[] = [
    ...PROTOS.map((p) => ({
      label: `${p} upstream${p === d.name ? " (model rewritten: translated)" : ""}`,
      t: conf[p],
    })),
    { label: `${d.name} upstream (same model name: passthrough)`, t: pass[d.name] },
  ];

  describe(`${d.name} SDK as the client`, () => {
    for (const { label, t } of targets) {
      for (const stream of MODES) {
        it(`answers from the ${label}, ${modeName(stream)}: text, finish, usage, usage log ${compat(SDK[d.name], t.upstream, stream ? "stream" : "text", "usage", "cache")}`, async () => {
          mocks[t.upstream].reply({ text: ["The capital", " of France", " is Paris."], usage: BASIC_USAGE });
          const out = await exchange(d, { model: t.model, stream });
          expect(out.text).toBe("The capital of France is Paris.");
          expect(out.thinking).toBe("");
          expect(out.calls).toEqual([]);
          expect(out.finish).toBe(d.finishStop);
          const tokens = tokensOf(t.upstream, BASIC_USAGE);
          expect(d.usage(out.usage)).toEqual(d.expectedUsage(tokens));
          expectUpstreamCall(t, stream);
          await expectLogged(d, out, t.model, tokens, BASIC_COST[t.model]!);
        });

        it(`round-trips a tool call through the ${label}, ${modeName(stream)} ${compat(SDK[d.name], t.upstream, ...(stream ? (["tools", "stream"] as const) : (["tools"] as const)))}`, async () => {
          const [u1, u2] = TOOL_USAGE as [(typeof TOOL_USAGE)[0], (typeof TOOL_USAGE)[0]];
          mocks[t.upstream].reply({ toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }], usage: u1 });
          const first = await exchange(d, { model: t.model, stream, tools: true });
          expect(first.calls).toHaveLength(1);
          const call = first.calls[0]!;
          expect(call).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
          if (d.name !== "gemini") expect(call.id).toMatch(/\S/); // Gemini's wire format has no call id
          expect(first.finish).toBe(d.finishTool);
          expect(first.text).toBe("");
          expect(d.usage(first.usage)).toEqual(d.expectedUsage(tokensOf(t.upstream, u1)));
          const tools = lastRequest(t.upstream).body as Body;
          expect(JSON.stringify(tools.tools)).toContain("get_weather");

          mocks[t.upstream].reply({ text: ["It is 18 °C and clear in Paris."], usage: u2 });
          const second = await exchange(d, { model: t.model, stream, tools: true, followUp: call });
          expect(second.text).toBe("It is 18 °C and clear in Paris.");
          expect(second.finish).toBe(d.finishStop);
          expectLinkedToolResult(t.upstream);
          expectUpstreamCall(t, stream);
          await expectLogged(d, first, t.model, tokensOf(t.upstream, u1), TOOL_COST[t.model]![0]);
          await expectLogged(d, second, t.model, tokensOf(t.upstream, u2), TOOL_COST[t.model]![1]);
        });
      }

      it(`maps the ${label}'s length and content-filter finish reasons, streaming and not`, async () => {
        for (const stream of MODES) {
          mocks[t.upstream].reply({
            text: ["Paris is"],
            finish: "length",
            usage: { promptTokens: 9, completionTokens: 2 },
          });
          const cut = await exchange(d, { model: t.model, stream });
          expect([cut.text, cut.finish]).toEqual(["Paris is", d.finishLength]);
          mocks[t.upstream].reply({
            text: [""],
            finish: "content_filter",
            usage: { promptTokens: 9, completionTokens: 0 },
          });
          const filtered = await exchange(d, { model: t.model, stream });
          expect(filtered.finish).toBe(d.finishFilter);
        }
      });

      it(`ends the stream with the client protocol's error when the ${label} fails mid-stream`, async () => {
        const before = mocks[t.upstream].requests.length;
        mocks[t.upstream].reply({
          text: ["Partial", " answer", " never finished"],
          midStreamError: { message: "Upstream overloaded mid-stream", afterChunks: 2 },
          usage: BASIC_USAGE,
        });
        const { out, error } = await attempt(d, { model: t.model, stream: true });
        expect(error).not.toBeNull();
        expect(d.isApiError(error), String(error)).toBe(true);
        expect(String((error as Error).message)).toContain("Upstream overloaded mid-stream");
        // Re-encoded and same-protocol relays alike replace the upstream's error event with the gateway's,
        // so the message carries the request id.
        expect(String((error as Error).message)).toContain(`request id: ${out.requestId}`);
        expect(out.text).toBe("Partial answer");
        expect(out.finish).not.toBe(d.finishStop);
        expect(mocks[t.upstream].requests.length).toBe(before + 1); // no retry after the first byte
        const row = await usageRow(out.requestId!);
        expect(row.status).toBe(502);
      });
    }

    if (d.name !== "openai") {
      // The vendor protocols carry reasoning signatures that must come back with the tool call they preceded.
      for (const stream of MODES) {
        it(`keeps the reasoning signature through a tool call round trip to its own vendor, ${modeName(stream)}`, async () => {
          const t = think[d.name];
          const signature = d.name === "anthropic" ? "sig-anthropic-conformance" : "c2lnLWdlbWluaS1jb25mb3JtYW5jZQ==";
          mocks[t.upstream].reply({
            thinking: ["Weather needs a tool."],
            signature,
            toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
            usage: TOOL_USAGE[0],
          });
          const first = await exchange(d, { model: t.model, stream, reasoning: true, tools: true });
          expect(first.thinking).toBe("Weather needs a tool.");
          const call = first.calls[0]!;
          if (d.name === "anthropic") expect(first.thinkingSignature).toBe(signature);
          else expect(call.signature).toBe(signature);
          mocks[t.upstream].reply({ text: ["18 °C."], usage: TOOL_USAGE[1] });
          const second = await exchange(d, {
            model: t.model,
            stream,
            reasoning: true,
            tools: true,
            followUp: call,
            ...(first.thinkingSignature
              ? { followUpThinking: { text: first.thinking, signature: first.thinkingSignature } }
              : {}),
          });
          expect(second.text).toBe("18 °C.");
          expectLinkedToolResult(t.upstream);
          const body = lastRequest(t.upstream).body as Body;
          if (d.name === "anthropic") {
            const assistant = (body.messages as { role: string; content: Body[] }[]).find(
              (m) => m.role === "assistant",
            )!;
            expect(assistant.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
            expect(assistant.content[0]).toMatchObject({ thinking: "Weather needs a tool.", signature });
          } else {
            const model = (body.contents as { role: string; parts: Body[] }[]).find((c) => c.role === "model")!;
            expect(model.parts.find((x) => x.functionCall)).toMatchObject({ thoughtSignature: signature });
          }
        });
      }
    }

    it("answers 200 with empty content when thinking used all of max_tokens, reasoning tokens in usage", async () => {
      for (const p of PROTOS) {
        for (const stream of MODES) {
          const u = { promptTokens: 40, completionTokens: 0, reasoningTokens: 2048 };
          mocks[p].reply({ thinking: ["Still thinking"], finish: "length", usage: u });
          const out = await exchange(d, { model: think[p].model, stream, reasoning: true });
          expect([out.text, out.thinking, out.finish]).toEqual(["", "Still thinking", d.finishLength]);
          expect(d.usage(out.usage)).toEqual(d.expectedUsage(tokensOf(p, u)));
        }
      }
    });

    for (const p of PROTOS) {
      for (const stream of MODES) {
        it(`surfaces reasoning from the ${p} upstream's reasoning model, ${modeName(stream)} ${compat(SDK[d.name], p, "reasoning")}`, async () => {
          const t = think[p];
          mocks[p].reply({
            thinking: ["Let me think.", " France's capital is Paris."],
            text: ["Paris."],
            usage: THINK_USAGE,
          });
          const out = await exchange(d, { model: t.model, stream, reasoning: true });
          expect(out.text).toBe("Paris.");
          expect(out.thinking).toBe("Let me think. France's capital is Paris.");
          expect(out.finish).toBe(d.finishStop);
          expectReasoningAsked(p);
          const tokens = tokensOf(p, THINK_USAGE);
          expect(d.usage(out.usage)).toEqual(d.expectedUsage(tokens));
          await expectLogged(d, out, t.model, tokens, THINK_COST);
        });
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The client-protocol surfaces: errors, model lists, count_tokens, Gemini's JSON-array streaming and ?key=.

const BAD_KEY = "sk-conformance-not-a-real-key-0000000000";

/** One generation request in each protocol, by hand (raw HTTP), with the key where that protocol's SDK puts it. */
const raw: Record<Proto, (model: string, key: string, extra?: Body) => Promise<Response>> = {
  openai: (model, key, extra = {}) =>
    fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: PROMPT }], ...extra }),
    }),
  anthropic: (model, key, extra = {}) =>
    fetch(`${base}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: 256, messages: [{ role: "user", content: PROMPT }], ...extra }),
    }),
  gemini: (model, key, extra = {}) =>
    fetch(`${base}/v1beta/models/${model}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: PROMPT }] }], ...extra }),
    }),
};

/** Checks the error body is in the protocol's shape with the request id; `kind` is OpenAI's code, Anthropic's type or Gemini's status. */
async function expectErrorShape(p: Proto, res: Response, status: number, kind: string): Promise<string> {
  expect(res.status).toBe(status);
  const id = res.headers.get("x-gateway-request-id");
  expect(id).toMatch(/^req_[0-9a-f]{24}$/);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = (await res.json()) as Body;
  let message: string;
  if (p === "openai") {
    const e = body.error as Body;
    expect(Object.keys(e).sort()).toEqual(["code", "message", "param", "type"]);
    expect(e.code).toBe(kind);
    message = String(e.message);
  } else if (p === "anthropic") {
    expect(body).toMatchObject({ type: "error", error: { type: kind } });
    message = String((body.error as Body).message);
  } else {
    expect(body.error).toMatchObject({ code: status, status: kind });
    message = String((body.error as Body).message);
  }
  expect(message.endsWith(`(request id: ${id})`)).toBe(true);
  return message;
}

const ERROR_KIND: Record<Proto, { unauthenticated: string; notFound: string; badRequest: string }> = {
  openai: { unauthenticated: "invalid_api_key", notFound: "model_not_found", badRequest: "unsupported_parameter" },
  anthropic: {
    unauthenticated: "authentication_error",
    notFound: "not_found_error",
    badRequest: "invalid_request_error",
  },
  gemini: { unauthenticated: "UNAUTHENTICATED", notFound: "NOT_FOUND", badRequest: "INVALID_ARGUMENT" },
};

/** A parameter the client's protocol has and the upstream's cannot honour, and the name the client knows it by. */
const UNSUPPORTED: Record<Proto, { model: string; extra: Body; param: string }> = {
  openai: { model: conf.anthropic.model, extra: { n: 2 }, param: "n" },
  // top_k was the example until issue 26: a sampling hint toward OpenAI is now dropped and named, not refused.
  anthropic: { model: conf.openai.model, extra: { container: "container_1" }, param: "container" },
  gemini: {
    model: conf.anthropic.model,
    extra: { generationConfig: { candidateCount: 2 } },
    param: "generationConfig.candidateCount",
  },
};

describe("errors in each client protocol's shape, with the request id", () => {
  const upstreamCalls = () => PROTOS.map((p) => mocks[p].requests.length);

  for (const d of drivers) {
    const p = d.name;
    it(`${p}: 401 for an unknown key, 404 for an unknown model, 400 naming an unsupported parameter; nothing reaches an upstream`, async () => {
      const calls = upstreamCalls();
      await expectErrorShape(p, await raw[p](conf.openai.model, BAD_KEY), 401, ERROR_KIND[p].unauthenticated);
      const bad = await attempt(d, { model: conf.openai.model, stream: false, key: BAD_KEY });
      expect(d.isApiError(bad.error)).toBe(true);
      expect(d.statusOf(bad.error)).toBe(401);

      const notFound = await expectErrorShape(p, await raw[p]("conf-openai", apiKey), 404, ERROR_KIND[p].notFound);
      expect(notFound).toContain("conf-openai");
      const missing = await attempt(d, { model: "Conf OpenAI", stream: true });
      expect(d.statusOf(missing.error)).toBe(404);

      const u = UNSUPPORTED[p];
      const message = await expectErrorShape(p, await raw[p](u.model, apiKey, u.extra), 400, ERROR_KIND[p].badRequest);
      expect(message).toContain(`'${u.param}'`);
      expect(upstreamCalls()).toEqual(calls);
    });
  }

  it("openai: the unsupported parameter is also named in `param`", async () => {
    const res = await raw.openai(UNSUPPORTED.openai.model, apiKey, UNSUPPORTED.openai.extra);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("n");
  });

  it("gemini: a bad key in ?key= is a 401 UNAUTHENTICATED too", async () => {
    const res = await fetch(`${base}/v1beta/models/${conf.gemini.model}:generateContent?key=${BAD_KEY}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: PROMPT }] }] }),
    });
    await expectErrorShape("gemini", res, 401, "UNAUTHENTICATED");
  });
});

describe("model lists in each protocol's shape", () => {
  it("openai SDK: client.models.list()", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
    const list = await client.models.list();
    expect(list.data.map((m) => m.id).sort()).toEqual([...ALL_MODELS].sort());
    expect(list.data[0]).toMatchObject({ object: "model", owned_by: expect.any(String), created: expect.any(Number) });
  });

  it("anthropic SDK: client.models.list()", async () => {
    const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of client.models.list()) {
      expect(m).toMatchObject({ type: "model", display_name: expect.any(String), created_at: expect.any(String) });
      ids.push(m.id);
    }
    expect(ids.sort()).toEqual([...ALL_MODELS].sort());
  });

  it("genai SDK: ai.models.list() against /v1beta/models", async () => {
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base, apiVersion: "v1beta" } });
    const names: string[] = [];
    for await (const m of await ai.models.list()) {
      expect(m.supportedActions ?? []).toContain("generateContent");
      names.push(m.name ?? "");
    }
    expect(names.sort()).toEqual(ALL_MODELS.map((id) => `models/${id}`).sort());
  });
});

describe("protocol-specific endpoints", () => {
  it("anthropic SDK: messages.countTokens answers input_tokens without calling an upstream", async () => {
    const calls = mocks.anthropic.requests.length;
    const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
    const counted = await client.messages.countTokens({
      model: conf.anthropic.model,
      system: "Be brief.",
      messages: [{ role: "user", content: PROMPT }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(Number.isInteger(counted.input_tokens)).toBe(true);
    await expect(
      client.messages.countTokens({ model: "claude-unknown", messages: [{ role: "user", content: PROMPT }] }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    expect(mocks.anthropic.requests.length).toBe(calls);
  });

  for (const t of [conf.openai, pass.gemini]) {
    it(`gemini: streamGenerateContent without alt=sse answers one JSON array (${t.upstream} upstream, ${t.model})`, async () => {
      mocks[t.upstream].reply({ text: ["Par", "is."], usage: { promptTokens: 7, completionTokens: 2 } });
      const res = await fetch(`${base}/v1beta/models/${t.model}:streamGenerateContent`, {
        method: "POST",
        headers: { "x-goog-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: PROMPT }] }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/json");
      const chunks = (await res.json()) as {
        candidates: { content?: { parts?: { text?: string }[] }; finishReason?: string }[];
        usageMetadata?: Body;
      }[];
      expect(Array.isArray(chunks)).toBe(true);
      expect(
        chunks
          .flatMap((c) => c.candidates[0]?.content?.parts ?? [])
          .map((x) => x.text ?? "")
          .join(""),
      ).toBe("Paris.");
      expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe("STOP");
      expect(chunks.at(-1)!.usageMetadata).toMatchObject({
        promptTokenCount: 7,
        candidatesTokenCount: 2,
        totalTokenCount: 9,
      });
      expectUpstreamCall(t, true);
    });
  }

  it("gemini: the key may come as ?key=", async () => {
    mocks.anthropic.reply({ text: ["Paris."], usage: { promptTokens: 5, completionTokens: 1 } });
    const res = await fetch(`${base}/v1beta/models/${conf.anthropic.model}:generateContent?key=${apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: PROMPT }] }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { candidates: { content: { parts: { text: string }[] } }[] };
    expect(body.candidates[0]!.content.parts[0]!.text).toBe("Paris.");
    const row = await usageRow(res.headers.get("x-gateway-request-id")!);
    expect(row).toMatchObject({
      protocol: "gemini",
      status: 200,
      promptTokens: 5,
      completionTokens: 1,
      costMicro: "18",
    }); // contract: 5 × 2 + 1 × 8
  });
});
