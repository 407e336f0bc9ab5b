import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Property-based fuzzing of the three client protocols' request handling (issue 12): thousands of generated
// bad inputs (broken JSON, wrong types in every field, unknown models, odd roles and content parts, huge
// numbers, random path segments) against the running gateway. Whatever comes in, the answer is never a 5xx;
// a refusal is in the caller's protocol shape and names the request id of its X-Gateway-Request-Id header.

const MODEL = "demo-chat-2025-01-01";
// Every client protocol goes to every upstream protocol: the in-process demo, and mock OpenAI, Anthropic and
// Gemini upstreams over HTTP (so the translators in every direction see the generated input).
const MODELS = [MODEL, "fz-openai-2025-01-01", "fz-anthropic-2025-01-01", "fz-gemini-2025-01-01"];
let mocks: MockUpstream[] = [];
const RUNS = Number(process.env.FUZZ_RUNS ?? 700);
let gw: Gateway;
let key: string;

beforeAll(async () => {
  mocks = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  const [o, a, g] = mocks as [MockUpstream, MockUpstream, MockUpstream];
  const route = (upstream: string) => [{ upstream, model: "m" }];
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "demo", protocol: "demo", baseUrl: "demo://local" },
        { name: "o", protocol: "openai", baseUrl: o.url, apiKey: "test-upstream-key" },
        { name: "a", protocol: "anthropic", baseUrl: a.url, apiKey: "test-upstream-key" },
        { name: "g", protocol: "gemini", baseUrl: g.url, apiKey: "test-upstream-key" },
      ],
      models: [
        { id: MODEL, price: { input: 1, output: 1 }, routes: route("demo") },
        { id: MODELS[1]!, price: { input: 1, output: 1 }, routes: route("o") },
        { id: MODELS[2]!, price: { input: 1, output: 1 }, routes: route("a") },
        { id: MODELS[3]!, price: { input: 1, output: 1 }, routes: route("g") },
      ],
    },
    // Generated calls that an upstream refuses must not open breakers for the rest of the run.
    env: { MODELGATE_BREAKER_FAILURES: "1000000", MODELGATE_RETRY_ATTEMPTS: "1" },
  });
  await gw.admin("account create", { name: "fuzz", balance: "1000000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "fuzz", name: "k" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(mocks.map((m) => m.close()));
});

type Shape = "openai" | "anthropic" | "gemini";

interface Sent {
  path: string;
  body: string;
  headers?: Record<string, string>;
}

const seen = { total: 0, refused: 0, ok: 0, server: 0 };

/** Sends one generated request and checks the property; returns a description of a violation, or null. */
async function check(shape: Shape, sent: Sent): Promise<void> {
  const auth: Record<string, string> =
    shape === "anthropic"
      ? { "x-api-key": key, "anthropic-version": "2023-06-01" }
      : shape === "gemini"
        ? { "x-goog-api-key": key }
        : { authorization: `Bearer ${key}` };
  const res = await fetch(`${gw.bases[0]}${sent.path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth, ...sent.headers },
    body: sent.body,
  });
  const text = await res.text();
  seen.total++;
  if (res.status >= 500) seen.server++;
  expect(res.status, `${sent.path} ${sent.body.slice(0, 300)} → ${text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status < 400) {
    seen.ok++;
    return;
  }
  seen.refused++;
  const id = res.headers.get("x-gateway-request-id");
  expect(id).toMatch(/^req_/);
  const body = JSON.parse(text) as {
    type?: string;
    error?: { message?: string; type?: string; code?: unknown; status?: string };
  };
  if (shape === "openai") expect(typeof body.error?.type, text).toBe("string");
  if (shape === "anthropic") expect(body.type, text).toBe("error");
  if (shape === "gemini") expect(body.error?.code, text).toBe(res.status);
  expect(body.error?.message, text).toContain(`(request id: ${id})`);
}

// Values of every JSON type, sometimes big, sometimes deeply nested (past the gateway's depth limit).
const anyJson = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(1e308, -1, 0, 2 ** 53 + 1, "", "\u0000", "x".repeat(5000), null, true) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60, max: 300 }).map((n) => JSON.parse("[".repeat(n) + "]".repeat(n)) as unknown),
  },
);
// Most fields absent and most present ones plausible, so that many requests get past the first check and
// reach the translators, the demo upstream and the relays; every field is sometimes garbage.
const maybe = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
const model = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...MODELS) },
  fc.constant("gpt-4o"),
  fc.string({ maxLength: 20 }),
  anyJson,
);
const role = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("user", "assistant", "system", "developer", "tool", "model", "function") },
  fc.string({ maxLength: 8 }),
  anyJson,
);
const part = fc.oneof(
  fc.record(
    {
      type: fc.constantFrom(
        "text",
        "image_url",
        "image",
        "tool_use",
        "tool_result",
        "thinking",
        "input_audio",
        "document",
      ),
      text: maybe(anyJson),
      image_url: maybe(anyJson),
      source: maybe(anyJson),
      id: maybe(anyJson),
      input: maybe(anyJson),
      content: maybe(anyJson),
    },
    { requiredKeys: ["type"] },
  ),
  anyJson,
);
const content = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 50 }) },
  { weight: 2, arbitrary: fc.array(part, { maxLength: 3 }) },
  anyJson,
);
const message = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      { role, content, tool_calls: maybe(anyJson), tool_call_id: maybe(anyJson), name: maybe(anyJson) },
      { requiredKeys: ["role", "content"] },
    ),
  },
  anyJson,
);
const tools = fc.oneof(
  fc.array(
    fc.record({
      type: maybe(fc.constantFrom("function", "custom", "web_search")),
      function: maybe(fc.record({ name: anyJson, parameters: maybe(anyJson) })),
      name: maybe(anyJson),
      input_schema: maybe(anyJson),
      functionDeclarations: maybe(anyJson),
    }),
    { maxLength: 2 },
  ),
  anyJson,
);
const num = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -10, max: 200_000 }) }, fc.double(), anyJson);

/** Turns a generated object into a body: mostly its JSON, sometimes broken JSON or not JSON at all. */
const asBody = (obj: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 12, arbitrary: obj.map((o) => JSON.stringify(o) ?? "null") },
    { weight: 1, arbitrary: fc.tuple(obj, fc.nat()).map(([o, n]) => (JSON.stringify(o) ?? "").slice(0, n % 200)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
  );

const openaiBody = asBody(
  fc.record(
    {
      model,
      messages: fc.oneof({ weight: 8, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) }, anyJson),
      stream: maybe(fc.oneof(fc.boolean(), anyJson)),
      stream_options: maybe(anyJson),
      max_tokens: maybe(num),
      max_completion_tokens: maybe(num),
      temperature: maybe(num),
      top_p: maybe(num),
      n: maybe(num),
      stop: maybe(anyJson),
      tools: maybe(tools),
      tool_choice: maybe(anyJson),
      response_format: maybe(anyJson),
      reasoning_effort: maybe(anyJson),
      logprobs: maybe(anyJson),
      seed: maybe(num),
      user: maybe(anyJson),
    },
    { requiredKeys: [] },
  ),
);
const anthropicBody = asBody(
  fc.record(
    {
      model,
      max_tokens: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 1, max: 50 }) }, num),
      messages: fc.oneof({ weight: 8, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) }, anyJson),
      system: maybe(fc.oneof(fc.string(), fc.array(part, { maxLength: 2 }), anyJson)),
      stream: maybe(fc.oneof(fc.boolean(), anyJson)),
      temperature: maybe(num),
      top_k: maybe(num),
      stop_sequences: maybe(anyJson),
      tools: maybe(tools),
      tool_choice: maybe(anyJson),
      thinking: maybe(anyJson),
      metadata: maybe(anyJson),
    },
    { requiredKeys: [] },
  ),
);
// Responses API items: messages (short and typed form), function calls and their outputs, reasoning items,
// references to stored items, and unknown kinds; their parts mix the input and output part types.
const responsesPart = fc.oneof(
  fc.record(
    {
      type: fc.constantFrom("input_text", "output_text", "input_image", "input_file", "refusal", "text"),
      text: maybe(anyJson),
      image_url: maybe(anyJson),
      detail: maybe(anyJson),
      refusal: maybe(anyJson),
    },
    { requiredKeys: ["type"] },
  ),
  anyJson,
);
const responsesItem = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      {
        type: maybe(
          fc.constantFrom("message", "function_call", "function_call_output", "reasoning", "item_reference", "x"),
        ),
        role,
        content: fc.oneof(fc.string({ maxLength: 30 }), fc.array(responsesPart, { maxLength: 3 }), anyJson),
        call_id: maybe(anyJson),
        name: maybe(anyJson),
        arguments: maybe(anyJson),
        output: maybe(anyJson),
        summary: maybe(anyJson),
        encrypted_content: maybe(anyJson),
        id: maybe(anyJson),
      },
      { requiredKeys: [] },
    ),
  },
  anyJson,
);
const responsesBody = asBody(
  fc.record(
    {
      model,
      input: fc.oneof(
        { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
        { weight: 8, arbitrary: fc.array(responsesItem, { minLength: 1, maxLength: 4 }) },
        anyJson,
      ),
      instructions: maybe(anyJson),
      stream: maybe(fc.oneof(fc.boolean(), anyJson)),
      store: maybe(anyJson),
      previous_response_id: maybe(fc.oneof(fc.constant("resp_0123456789abcdef"), anyJson)),
      max_output_tokens: maybe(num),
      temperature: maybe(num),
      tools: maybe(
        fc.oneof(
          fc.array(fc.record({ type: maybe(fc.constantFrom("function", "web_search", "x")), name: maybe(anyJson) }), {
            maxLength: 2,
          }),
          anyJson,
        ),
      ),
      tool_choice: maybe(anyJson),
      text: maybe(anyJson),
      reasoning: maybe(anyJson),
      include: maybe(anyJson),
      metadata: maybe(anyJson),
    },
    { requiredKeys: [] },
  ),
);
const geminiPart = fc.oneof(
  fc.record({
    text: maybe(anyJson),
    inlineData: maybe(anyJson),
    functionCall: maybe(anyJson),
    functionResponse: maybe(anyJson),
    thought: maybe(anyJson),
  }),
  anyJson,
);
const geminiBody = asBody(
  fc.record(
    {
      contents: fc.oneof(
        {
          weight: 8,
          arbitrary: fc.array(
            fc.oneof(
              {
                weight: 8,
                arbitrary: fc.record({
                  role: maybe(fc.constantFrom("user", "model")),
                  parts: fc.oneof(
                    {
                      weight: 8,
                      arbitrary: fc.array(
                        fc.oneof(
                          { weight: 6, arbitrary: fc.record({ text: fc.string({ maxLength: 30 }) }) },
                          geminiPart,
                        ),
                        { minLength: 1, maxLength: 3 },
                      ),
                    },
                    anyJson,
                  ),
                }),
              },
              anyJson,
            ),
            { minLength: 1, maxLength: 3 },
          ),
        },
        anyJson,
      ),
      systemInstruction: maybe(anyJson),
      generationConfig: maybe(
        fc.oneof(
          fc.record({
            maxOutputTokens: maybe(num),
            temperature: maybe(num),
            thinkingConfig: maybe(anyJson),
            responseSchema: maybe(anyJson),
            stopSequences: maybe(anyJson),
          }),
          anyJson,
        ),
      ),
      tools: maybe(tools),
      toolConfig: maybe(anyJson),
      safetySettings: maybe(anyJson),
    },
    { requiredKeys: [] },
  ),
);
// A model segment in the URL: the real one, another, or raw bytes percent-encoded (malformed escapes too).
const geminiModel = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...MODELS) },
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom("%", "%E0%A4%A", "%zz", "..", "models%2F" + MODEL),
);

const params = { numRuns: RUNS, endOnFailure: true } as const;

describe("protocol fuzzing: never a 5xx, always the caller's error shape with the request id", () => {
  it("OpenAI chat completions", async () => {
    await fc.assert(
      fc.asyncProperty(openaiBody, (body) => check("openai", { path: "/v1/chat/completions", body })),
      {
        ...params,
        // Found by this property in CI: an image_url part without its image_url object was a 500.
        examples: [
          [`{"model":"${MODELS[1]}","messages":[{"role":"developer","content":[{"type":"image_url","source":1}]}]}`],
          [`{"model":"${MODEL}","messages":[{"role":"user","content":[{"type":"text"}]}]}`],
        ],
      },
    );
  });
  it("OpenAI responses", async () => {
    await fc.assert(
      fc.asyncProperty(responsesBody, (body) => check("openai", { path: "/v1/responses", body })),
      params,
    );
  });
  it("Anthropic messages and count_tokens", async () => {
    await fc.assert(
      fc.asyncProperty(anthropicBody, fc.boolean(), (body, count) =>
        check("anthropic", { path: count ? "/v1/messages/count_tokens" : "/v1/messages", body }),
      ),
      params,
    );
  });
  it("Gemini generateContent and streamGenerateContent", async () => {
    await fc.assert(
      fc.asyncProperty(
        geminiBody,
        geminiModel,
        fc.constantFrom(":generateContent", ":streamGenerateContent", ":streamGenerateContent?alt=sse"),
        (body, m, verb) => check("gemini", { path: `/v1beta/models/${m}${verb}`, body }),
      ),
      params,
    );
  });
  afterAll(() => {
    console.log(
      `protocol fuzzing: ${seen.total} requests, ${seen.refused} refused (4xx), ${seen.ok} answered, ${seen.server} server errors`,
    );
  });
});
