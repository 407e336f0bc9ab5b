import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compat } from "../helpers/compat.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import {
  type SdkCall,
  anthropicUsageOf,
  chatViaOpenAI,
  expectBilledExactly,
  generateViaGenai,
  messagesViaAnthropic,
} from "../helpers/provider-suite.ts";
import { type BedrockMock, DEFAULT_BEDROCK_CREDENTIALS, startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import type { MockUsage } from "../mocks/script.ts";

// AWS Bedrock through the gateway (issue 27, item 2), configured as operators write it (provider: bedrock,
// region, keys), against the mock Bedrock runtime, which recomputes every SigV4 signature and holds bodies to
// Bedrock's rules (proven against AWS's own client in data-plane/src/providers/bedrock/mock-upstream.test.ts).
// Each client protocol's official SDK reaches an Anthropic model (InvokeModel, the Messages body) and another
// model (Converse), streamed and not; what the client is told of usage and what the usage log bills are exact,
// cache reads and cache writes in their own price classes.

const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const NOVA = "us.amazon.nova-pro-v1:0";
const MODELS = { claude: "claude-on-bedrock", nova: "nova-on-bedrock" } as const;
type Target = keyof typeof MODELS;

// $3 / $15 per million tokens, cache reads $0.30: micro-units per token 3, 15 and 0.3; cache writes at the
// documented defaults, 1.25 × input for 5 minutes (3.75) and 2 × input for 1 hour (6).
const PRICE = { input: 3, output: 15, cachedInput: 0.3 };
// Bedrock's Claude reports cache writes as one count (5-minute writes); Converse splits them by lifetime.
const USAGE: Record<Target, MockUsage> = {
  claude: { promptTokens: 1000, cachedTokens: 400, cacheWrite5mTokens: 200, completionTokens: 50 },
  nova: {
    promptTokens: 1000,
    cachedTokens: 400,
    cacheWrite5mTokens: 200,
    cacheWrite1hTokens: 100,
    completionTokens: 50,
  },
};
// claude: 400 input × 3 + 400 read × 0.3 + 200 written (5m) × 3.75 + 50 output × 15 = 1200 + 120 + 750 + 750
// nova:   300 input × 3 + 400 read × 0.3 + 200 (5m) × 3.75 + 100 (1h) × 6 + 50 × 15 = 900 + 120 + 750 + 600 + 750
const COST: Record<Target, string> = { claude: "2820", nova: "3120" };

/** Temporary credentials the gateway's process finds in its environment (the default AWS chain). */
const CHAIN = {
  accessKeyId: "ASIAMOCKCHAIN0000001",
  secretAccessKey: "chain/secret",
  sessionToken: "chain-session-token",
};

let mock: BedrockMock;
let gw: Gateway;
let base: string;
let key: string;

beforeAll(async () => {
  mock = await startBedrockUpstream({ models: [CLAUDE, NOVA], credentials: [DEFAULT_BEDROCK_CREDENTIALS, CHAIN] });
  const bedrock = {
    provider: "bedrock",
    region: "us-east-1",
    baseUrl: mock.url,
    accessKeyId: "${AWS_KEY_ID}",
    secretAccessKey: "${AWS_SECRET}",
  };
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "bedrock", ...bedrock },
        { name: "bedrock-wrong-secret", ...bedrock, secretAccessKey: "not-the-secret" },
        // no keys: the default AWS credential chain of the gateway's process
        { name: "bedrock-chain", provider: "bedrock", region: "us-east-1", baseUrl: mock.url },
      ],
      models: [
        { id: MODELS.claude, price: PRICE, routes: [{ upstream: "bedrock", model: CLAUDE }] },
        { id: MODELS.nova, price: PRICE, routes: [{ upstream: "bedrock", model: NOVA }] },
        { id: "claude-wrong-secret", price: PRICE, routes: [{ upstream: "bedrock-wrong-secret", model: CLAUDE }] },
        { id: "unknown-on-bedrock", price: PRICE, routes: [{ upstream: "bedrock", model: "amazon.nothing-v9:0" }] },
        { id: "nova-via-chain", price: PRICE, routes: [{ upstream: "bedrock-chain", model: NOVA }] },
      ],
    },
    env: {
      AWS_KEY_ID: DEFAULT_BEDROCK_CREDENTIALS.accessKeyId,
      AWS_SECRET: DEFAULT_BEDROCK_CREDENTIALS.secretAccessKey,
      // the default chain's first source
      AWS_ACCESS_KEY_ID: CHAIN.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CHAIN.secretAccessKey,
      AWS_SESSION_TOKEN: CHAIN.sessionToken,
      AWS_EC2_METADATA_DISABLED: "true",
    },
  });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "bedrock", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "bedrock" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

const expectBilled = (requestId: string | null, target: Target) =>
  expectBilledExactly(gw, "bedrock", requestId, {
    model: MODELS[target],
    usage: USAGE[target],
    costMicro: COST[target],
  });

/** What reached Bedrock for the last call: the operation and the model id (decoded from the path). */
function lastCall(): { model: string; op: string; body: Record<string, unknown> } {
  const r = mock.requests.at(-1)!;
  const m = /^\/model\/([^/]+)\/([a-z-]+)$/.exec(r.url)!;
  return { model: decodeURIComponent(m[1]!), op: m[2]!, body: r.body as Record<string, unknown> };
}

const expectedOp = (target: Target, stream: boolean) =>
  target === "claude" ? (stream ? "invoke-with-response-stream" : "invoke") : stream ? "converse-stream" : "converse";

/** One SDK call's target, and what Bedrock was scripted to answer. */
const call = (target: Target, stream: boolean): SdkCall => ({
  base,
  key,
  stream,
  model: MODELS[target],
  text: "Hello from Bedrock.",
  usage: USAGE[target],
});

const CASES: [Target, boolean][] = [
  ["claude", false],
  ["claude", true],
  ["nova", false],
  ["nova", true],
];

describe("AWS Bedrock through the gateway", () => {
  for (const [target, stream] of CASES) {
    const how = `${target === "claude" ? "an Anthropic model (InvokeModel)" : "a Converse model"}, ${stream ? "streamed" : "not streamed"}`;

    it(`openai SDK → ${how}: the answer, its usage, and the bill ${compat("openai-sdk", "bedrock", stream ? "stream" : "text", "usage")}`, async () => {
      mock.reply({ text: ["Hello", " from", " Bedrock."], usage: USAGE[target] });
      const requestId = await chatViaOpenAI(call(target, stream), { max_tokens: 100 });
      expect(lastCall()).toMatchObject({ model: target === "claude" ? CLAUDE : NOVA, op: expectedOp(target, stream) });
      await expectBilled(requestId, target);
    });

    it(`Anthropic SDK → ${how}: ${target === "claude" ? "the body passes through as Bedrock takes it, betas included" : "translated to Converse"}; usage and bill ${compat("anthropic-sdk", "bedrock", stream ? "stream" : "text", "usage")}`, async () => {
      mock.reply({ text: ["Hello", " from", " Bedrock."], usage: USAGE[target] });
      const { msg, requestId } = await messagesViaAnthropic(
        call(target, stream),
        { system: "Be brief." },
        { headers: { "anthropic-beta": "context-1m-2025-08-07" } },
      );
      expect(msg.model).toBe(MODELS[target]);
      expect(msg.usage).toMatchObject(anthropicUsageOf(USAGE[target]));
      const sent = lastCall();
      expect(sent).toMatchObject({ model: target === "claude" ? CLAUDE : NOVA, op: expectedOp(target, stream) });
      if (target === "claude") {
        // Bedrock's form of the Messages body: the client's, without model and stream, with its version and betas.
        expect(sent.body).toEqual({
          max_tokens: 100,
          system: "Be brief.",
          messages: [{ role: "user", content: "Hi" }],
          anthropic_version: "bedrock-2023-05-31",
          anthropic_beta: ["context-1m-2025-08-07"],
        });
      } else {
        expect(sent.body).toMatchObject({
          system: [{ text: "Be brief." }],
          messages: [{ role: "user", content: [{ text: "Hi" }] }],
          inferenceConfig: { maxTokens: 100 },
        });
      }
      await expectBilled(requestId, target);
    });

    it(`@google/genai → ${how}: the answer, its usage, and the bill ${compat("genai-sdk", "bedrock", stream ? "stream" : "text", "usage")}`, async () => {
      mock.reply({ text: ["Hello", " from", " Bedrock."], usage: USAGE[target] });
      const requestId = await generateViaGenai(call(target, stream), { maxOutputTokens: 100 });
      expect(lastCall()).toMatchObject({ model: target === "claude" ? CLAUDE : NOVA, op: expectedOp(target, stream) });
      await expectBilled(requestId, target);
    });
  }

  it("tool calls come back from either API, in the client's terms", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const tools = [
      {
        type: "function" as const,
        function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
      },
    ];
    for (const target of ["claude", "nova"] as const) {
      mock.reply({ toolCalls: [{ id: `tooluse_${target}`, name: "get_weather", arguments: { city: "Paris" } }] });
      const stream = await client.chat.completions.create({
        model: MODELS[target],
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools,
        stream: true,
      });
      let args = "";
      let id = "";
      let finish: string | null = null;
      for await (const chunk of stream) {
        const c = chunk.choices[0];
        for (const t of c?.delta.tool_calls ?? []) {
          if (t.id) id = t.id;
          args += t.function?.arguments ?? "";
        }
        if (c?.finish_reason) finish = c.finish_reason;
      }
      expect([target, id, JSON.parse(args), finish]).toEqual([
        target,
        `tooluse_${target}`,
        { city: "Paris" },
        "tool_calls",
      ]);
    }
    expect(lastCall().body).toMatchObject({
      toolConfig: { tools: [{ toolSpec: { name: "get_weather", inputSchema: { json: { type: "object" } } } }] },
    });
  });

  it("Bedrock's refusals in the client's terms: throttling 429, validation 400 with its message, a wrong secret 502 upstream_auth_failed, an unknown model", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] }).then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    const fallback = mock.fallback;
    try {
      // every try throttled (the gateway retries a 429 before answering)
      mock.fallback = { error: { status: 429, message: "Too many requests, please wait before trying again." } };
      const throttled = await ask(MODELS.nova);
      expect([throttled?.status, (throttled?.error as { code?: string })?.code]).toEqual([
        429,
        "upstream_rate_limited",
      ]);
    } finally {
      mock.fallback = fallback;
    }
    mock.reply({
      error: { status: 400, message: "Malformed input request: #: extraneous key [foo] is not permitted" },
    });
    const invalid = await ask(MODELS.claude);
    expect(invalid?.status).toBe(400);
    expect(invalid?.message).toContain("extraneous key [foo] is not permitted");

    const refusedBefore = mock.refused.length;
    const auth = await ask("claude-wrong-secret");
    expect([auth?.status, (auth?.error as { code?: string })?.code]).toEqual([502, "upstream_auth_failed"]);
    // the mock recomputed the signature and refused it, as AWS would
    expect(mock.refused.slice(refusedBefore).map((r) => r.reason)).toContainEqual(
      expect.stringContaining("signature we calculated does not match"),
    );
    expect(auth?.message).not.toContain("bedrock");

    const unknown = await ask("unknown-on-bedrock");
    expect([unknown?.status, (unknown?.error as { code?: string })?.code]).toEqual([502, "upstream_model_not_found"]);
  });

  it("an upstream without keys signs with the default AWS chain (here the process's environment, a session token included); one with keys ignores it", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const signer = () => /Credential=([^/]+)\//.exec(String(mock.requests.at(-1)!.headers.authorization))?.[1];
    mock.reply({ text: ["chained"] });
    const viaChain = await client.chat.completions.create({
      model: "nova-via-chain",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(viaChain.choices[0]!.message.content).toBe("chained");
    expect([signer(), mock.requests.at(-1)!.headers["x-amz-security-token"]]).toEqual([
      CHAIN.accessKeyId,
      CHAIN.sessionToken,
    ]);
    mock.reply({ text: ["keyed"] });
    await client.chat.completions.create({ model: MODELS.nova, messages: [{ role: "user", content: "Hi" }] });
    expect([signer(), mock.requests.at(-1)!.headers["x-amz-security-token"]]).toEqual([
      DEFAULT_BEDROCK_CREDENTIALS.accessKeyId,
      undefined,
    ]);
  });

  it("a stream Bedrock breaks off mid-way ends with the client's error event", async () => {
    mock.reply({
      text: ["a", "b", "c"],
      midStreamError: { message: "Model stream failed", type: "modelStreamErrorException", afterChunks: 1 },
    });
    const client = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
    const s = client.messages.stream({
      model: MODELS.claude,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
    });
    await expect(s.finalMessage()).rejects.toThrow(/Model stream failed/);
  });
});
