import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { usageRowOf } from "../helpers/usage-row.ts";
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
import { type MockUsage, mockEmbedding, mockTokens } from "../mocks/script.ts";
import { type VertexMock, startVertexUpstream } from "../mocks/vertex-upstream.ts";

// Google Vertex AI through the gateway (issue 27, item 3), configured as operators write it (provider: vertex,
// project, region, credentialsFile), against the mock Vertex, which verifies the JWT-bearer assertion with the
// service account's public key and takes only the tokens it issued (proven with google-auth-library in
// test/unit/vertex-mock.test.ts). Each client protocol's official SDK reaches a Gemini model
// (generateContent) and a Claude model (rawPredict), streamed and not; what the client is told of usage and
// what the usage log bills are exact, cache reads (Gemini's cachedContentTokenCount, Claude's
// cache_read_input_tokens) and cache writes in their own price classes.

const GEMINI = "gemini-2.5-flash";
const CLAUDE = "claude-sonnet-4-5@20250929";
const EMBED = "text-embedding-005";
const MODELS = { gemini: "gemini-on-vertex", claude: "claude-on-vertex" } as const;
type Target = keyof typeof MODELS;

// $3 / $15 per million tokens, cache reads $0.30: micro-units per token 3, 15 and 0.3; 5-minute cache writes
// at the documented default, 1.25 × input (3.75).
const PRICE = { input: 3, output: 15, cachedInput: 0.3 };
const USAGE: Record<Target, MockUsage> = {
  gemini: { promptTokens: 1000, cachedTokens: 400, completionTokens: 50 },
  claude: { promptTokens: 1000, cachedTokens: 400, cacheWrite5mTokens: 200, completionTokens: 50 },
};
// gemini: 600 input × 3 + 400 read × 0.3 + 50 output × 15 = 1800 + 120 + 750
// claude: 400 input × 3 + 400 read × 0.3 + 200 written × 3.75 + 50 × 15 = 1200 + 120 + 750 + 750
const COST: Record<Target, string> = { gemini: "2670", claude: "2820" };

let mock: VertexMock;
let gw: Gateway;
let base: string;
let key: string;
let dir: string;

beforeAll(async () => {
  mock = await startVertexUpstream({ project: "acme-prod", region: "us-east5" });
  dir = mkdtempSync(join(tmpdir(), "vertex-e2e-"));
  writeFileSync(join(dir, "sa.json"), mock.serviceAccount);
  writeFileSync(join(dir, "wrong.json"), mock.wrongKeyServiceAccount);
  const vertex = { provider: "vertex", project: "acme-prod", region: "us-east5", baseUrl: mock.url };
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "vertex", ...vertex, credentialsFile: join(dir, "sa.json") },
        { name: "vertex-wrong-key", ...vertex, credentialsFile: join(dir, "wrong.json") },
      ],
      models: [
        { id: MODELS.gemini, price: PRICE, routes: [{ upstream: "vertex", model: GEMINI }] },
        { id: MODELS.claude, price: PRICE, routes: [{ upstream: "vertex", model: CLAUDE }] },
        { id: "embed-on-vertex", type: "embedding", price: PRICE, routes: [{ upstream: "vertex", model: EMBED }] },
        { id: "gemini-wrong-key", price: PRICE, routes: [{ upstream: "vertex-wrong-key", model: GEMINI }] },
        {
          id: "gemini-failover",
          price: PRICE,
          routes: [
            { upstream: "vertex-wrong-key", model: GEMINI, priority: 0 },
            { upstream: "vertex", model: GEMINI, priority: 1 },
          ],
        },
      ],
    },
  });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "vertex", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "vertex" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const expectBilled = (requestId: string | null, target: Target) =>
  expectBilledExactly(gw, "vertex", requestId, {
    model: MODELS[target],
    usage: USAGE[target],
    costMicro: COST[target],
  });

/** The last model call Vertex got: publisher, model and method from its path, and its body. */
function lastCall(): {
  publisher: string;
  model: string;
  method: string;
  query: string;
  body: Record<string, unknown>;
} {
  const r = mock.requests.at(-1)!;
  const url = new URL(r.url, "http://x");
  const m = /^\/v1\/projects\/acme-prod\/locations\/us-east5\/publishers\/([a-z]+)\/models\/([^/:]+):([A-Za-z]+)$/.exec(
    url.pathname,
  )!;
  return {
    publisher: m[1]!,
    model: decodeURIComponent(m[2]!),
    method: m[3]!,
    query: url.search,
    body: r.body as Record<string, unknown>,
  };
}

const expectedCall = (target: Target, stream: boolean) =>
  target === "gemini"
    ? { publisher: "google", model: GEMINI, method: stream ? "streamGenerateContent" : "generateContent" }
    : { publisher: "anthropic", model: CLAUDE, method: stream ? "streamRawPredict" : "rawPredict" };

/** Scripts the next answer of the target's publisher. */
const script = (target: Target) =>
  (target === "gemini" ? mock.gemini : mock.anthropic).reply({
    text: ["Hello", " from", " Vertex."],
    usage: USAGE[target],
  });

/** One SDK call's target, and what Vertex was scripted to answer. */
const call = (target: Target, stream: boolean): SdkCall => ({
  base,
  key,
  stream,
  model: MODELS[target],
  text: "Hello from Vertex.",
  usage: USAGE[target],
});

const CASES: [Target, boolean][] = [
  ["gemini", false],
  ["gemini", true],
  ["claude", false],
  ["claude", true],
];

describe("Google Vertex AI through the gateway", () => {
  for (const [target, stream] of CASES) {
    const how = `${target === "gemini" ? "a Gemini model (generateContent)" : "a Claude model (rawPredict)"}, ${stream ? "streamed" : "not streamed"}`;

    it(`openai SDK → ${how}: the answer, its usage, and the bill ${compat("openai-sdk", "vertex", stream ? "stream" : "text", "usage")}`, async () => {
      script(target);
      const requestId = await chatViaOpenAI(call(target, stream), { max_tokens: 100 });
      expect(lastCall()).toMatchObject(expectedCall(target, stream));
      if (target === "claude") {
        expect(lastCall().body).toMatchObject({ anthropic_version: "vertex-2023-10-16", max_tokens: 100 });
        expect(lastCall().body).not.toHaveProperty("model");
      } else expect(lastCall().body).toMatchObject({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] });
      await expectBilled(requestId, target);
    });

    it(`Anthropic SDK → ${how}: ${target === "claude" ? "the body passes through as Vertex takes it, betas included" : "translated to Gemini"}; usage and bill ${compat("anthropic-sdk", "vertex", stream ? "stream" : "text", "usage")}`, async () => {
      script(target);
      const { msg, requestId } = await messagesViaAnthropic(
        call(target, stream),
        { system: "Be brief." },
        { headers: { "anthropic-beta": "context-1m-2025-08-07" } },
      );
      expect(msg.model).toBe(MODELS[target]);
      expect(msg.usage).toMatchObject(anthropicUsageOf(USAGE[target]));
      const sent = lastCall();
      expect(sent).toMatchObject(expectedCall(target, stream));
      if (target === "claude") {
        // Vertex's form of the Messages body: the client's, without model, with its version and the betas.
        expect(sent.body).toEqual({
          anthropic_version: "vertex-2023-10-16",
          max_tokens: 100,
          system: "Be brief.",
          messages: [{ role: "user", content: "Hi" }],
          ...(stream ? { stream: true } : {}),
          anthropic_beta: ["context-1m-2025-08-07"],
        });
      } else {
        expect(sent.body).toMatchObject({
          systemInstruction: { parts: [{ text: "Be brief." }] },
          contents: [{ role: "user", parts: [{ text: "Hi" }] }],
          generationConfig: { maxOutputTokens: 100 },
        });
      }
      await expectBilled(requestId, target);
    });

    it(`@google/genai → ${how}: ${target === "gemini" ? "the body passes through on Vertex's path" : "translated to Claude"}; usage and bill ${compat("genai-sdk", "vertex", stream ? "stream" : "text", "usage")}`, async () => {
      script(target);
      const requestId = await generateViaGenai(call(target, stream), { maxOutputTokens: 100 });
      const sent = lastCall();
      expect(sent).toMatchObject(expectedCall(target, stream));
      if (target === "gemini") {
        expect(sent.query).toBe(stream ? "?alt=sse" : "");
        expect(sent.body).toMatchObject({
          contents: [{ role: "user", parts: [{ text: "Hi" }] }],
          generationConfig: { maxOutputTokens: 100 },
        });
      } else expect(sent.body).toMatchObject({ anthropic_version: "vertex-2023-10-16", max_tokens: 100 });
      await expectBilled(requestId, target);
    });
  }

  it("embeddings from Vertex's :predict, for the openai SDK and @google/genai, billed by Vertex's token count", async () => {
    const texts = ["The quick brown fox", "jumps over the lazy dog"];
    const tokens = texts.reduce((n, t) => n + mockTokens(t), 0);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.embeddings
      .create({ model: "embed-on-vertex", input: texts, encoding_format: "float", dimensions: 8 })
      .withResponse();
    expect(data.data.map((d) => d.embedding)).toEqual(texts.map((t) => mockEmbedding(t, 8)));
    expect(data.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    expect(lastCall()).toMatchObject({ publisher: "google", model: EMBED, method: "predict" });
    expect(lastCall().body).toEqual({
      instances: texts.map((content) => ({ content })),
      parameters: { outputDimensionality: 8 },
    });
    const r = await usageRowOf(gw, "vertex", response.headers.get("x-gateway-request-id")!);
    expect(r).toMatchObject({ status: 200, promptTokens: tokens, costMicro: String(tokens * 3), estimated: false });

    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base, apiVersion: "v1beta" } });
    const one = await ai.models.embedContent({
      model: "embed-on-vertex",
      contents: "The quick brown fox",
      config: { taskType: "RETRIEVAL_QUERY" },
    });
    expect(one.embeddings?.map((e) => e.values)).toEqual([mockEmbedding("The quick brown fox")]);
    expect(lastCall().body).toEqual({ instances: [{ content: "The quick brown fox", task_type: "RETRIEVAL_QUERY" }] });
  });

  it("asks the token endpoint once for all these calls, and once for many concurrent ones", async () => {
    const issued = mock.tokenRequests.filter((t) => t.issued !== null);
    // One token for every call of this file so far (the wrong key's exchanges are refused, never issued).
    expect(issued).toHaveLength(1);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.chat.completions.create({ model: MODELS.gemini, messages: [{ role: "user", content: "Hi" }] }),
      ),
    );
    expect(answers.map((a) => a.choices[0]!.message.content)).toEqual(Array(12).fill("Hello from the mock."));
    expect(mock.tokenRequests.filter((t) => t.issued !== null)).toHaveLength(1);
  });

  it("a service account whose key Google refuses is a 502 upstream_auth_failed in each client's shape; the next route answers", async () => {
    const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const err = await openai.chat.completions
      .create({ model: "gemini-wrong-key", messages: [{ role: "user", content: "Hi" }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect([err?.status, (err?.error as { code?: string })?.code]).toEqual([502, "upstream_auth_failed"]);
    expect(err?.message).toMatch(/request id: req_/);
    expect(err?.message).not.toContain("vertex");
    expect(mock.tokenRequests.at(-1)).toEqual({ claims: {}, issued: null });

    const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
    const aerr = await anthropic.messages
      .create({ model: "gemini-wrong-key", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
      );
    expect(aerr?.status).toBe(502);
    expect((aerr?.error as { error?: { type?: string } })?.error?.type).toBe("api_error");

    const res = await fetch(`${base}/v1beta/models/gemini-wrong-key:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    const body = (await res.json()) as { error: { code: number; message: string; status: string } };
    expect(res.status).toBe(502);
    expect(body.error.message).toMatch(/request id: req_/);

    const ok = await openai.chat.completions.create({
      model: "gemini-failover",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(ok.choices[0]!.message.content).toBe("Hello from the mock.");
  });

  it("Vertex's own refusals reach the client: a revoked token is the gateway's 502 (and a new token is fetched for the next call), a bad request its 400", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    mock.anthropic.reply({ error: { status: 400, message: "messages: roles must alternate" } });
    const invalid = await client.chat.completions
      .create({ model: MODELS.claude, messages: [{ role: "user", content: "Hi" }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(invalid?.status).toBe(400);
    expect(invalid?.message).toContain("roles must alternate");
    // Vertex forgets the token (revoked): its 401 is the operator's problem, never the client's 401.
    mock.tokens.clear();
    const revoked = await client.chat.completions
      .create({ model: MODELS.gemini, messages: [{ role: "user", content: "Hi" }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect([revoked?.status, (revoked?.error as { code?: string })?.code]).toEqual([502, "upstream_auth_failed"]);
    // The gateway forgot the refused token: the next call gets a new one and its answer.
    const before = mock.tokenRequests.length;
    const again = await client.chat.completions.create({
      model: MODELS.gemini,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(again.choices[0]!.message.content).toBe("Hello from the mock.");
    expect(mock.tokenRequests.length - before).toBe(1);
  });
});
