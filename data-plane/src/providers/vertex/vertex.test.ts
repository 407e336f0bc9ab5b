import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type VertexMock, startVertexUpstream } from "../../../../test/mocks/vertex-upstream.ts";
import { mockEmbedding } from "../../../../test/mocks/script.ts";
import type { RouteSnapshot } from "../../contract/index.ts";
import { parseGeminiEmbeddingResponse } from "../../protocols/gemini/embeddings.ts";
import type { UpstreamResponse } from "../../upstreams/transport.ts";
import { TokenCache } from "../token-cache.ts";
import { type ProtocolCall, type ProviderContext, type ProviderRequest, ProviderAuthError } from "../types.ts";
import { vertexAccessToken, vertexTokens } from "./auth.ts";
import { vertex } from "./index.ts";

// The Vertex provider against the mock Vertex (which verifies the JWT-bearer assertion with the service
// account's public key and takes only the tokens it issued): URLs, bodies and bearers as Vertex wants them.

let mock: VertexMock;
beforeAll(async () => {
  mock = await startVertexUpstream({ project: "p-1", region: "us-east5" });
});
afterAll(async () => mock?.close());
beforeEach(() => vertexTokens.clear());

const route = (model: string, o: { serviceAccount?: string; baseUrl?: string } = {}): RouteSnapshot => ({
  upstream: "vertex",
  protocol: vertex.protocolFor(model, null),
  baseUrl: o.baseUrl ?? mock.url,
  apiKeyEnc: null,
  upstreamModel: model,
  weight: 1,
  priority: 0,
  connectTimeoutMs: 1000,
  firstByteTimeoutMs: 1000,
  idleTimeoutMs: 1000,
  provider: "vertex",
  providerOptions: { project: mock.project, region: mock.region },
  secretsEnc: "sealed",
});

const ctx = (serviceAccount: string | undefined): ProviderContext => ({
  apiKey: () => null,
  secrets: (): Record<string, string> => (serviceAccount === undefined ? {} : { serviceAccount }),
  logger: { warn: () => undefined, error: () => undefined },
});

const send = async (p: ProviderRequest) => {
  const res = await fetch(p.url, { method: "POST", headers: p.headers, body: String(p.body) });
  return { status: res.status, text: await res.text() };
};

const generate = (path: string, body: object, stream = false): ProtocolCall => ({
  path,
  body: JSON.stringify(body),
  op: "generate",
  stream,
});

const contents = [{ role: "user", parts: [{ text: "Hi" }] }];

describe("vertex provider", () => {
  it("speaks Anthropic's protocol for Claude models and Gemini's for the rest, at the regional or global host", () => {
    expect(vertex.protocolFor("claude-sonnet-4-5@20250929", null)).toBe("anthropic");
    expect(vertex.protocolFor("gemini-2.5-pro", null)).toBe("gemini");
    expect(() => vertex.protocolFor("gemini-2.5-pro", "openai")).toThrow(/gemini/);
    expect(vertex.defaultBaseUrl({ region: "us-central1", project: "p" })).toBe(
      "https://us-central1-aiplatform.googleapis.com",
    );
    expect(vertex.defaultBaseUrl({ region: "global", project: "p" })).toBe("https://aiplatform.googleapis.com");
  });

  it("puts Gemini calls under the project's publisher path with a bearer the token endpoint issued", async () => {
    const r = route("gemini-2.5-flash");
    const whole = await vertex.prepare(
      r,
      generate("/models/gemini-2.5-flash:generateContent", { contents }),
      ctx(mock.serviceAccount),
    );
    expect(whole.url).toBe(
      `${mock.url}/v1/projects/p-1/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent`,
    );
    expect(whole.headers.authorization).toMatch(/^Bearer ya29\.mock-/);
    expect(whole.headers).not.toHaveProperty("x-goog-api-key");
    expect((await send(whole)).status).toBe(200);
    const streamed = await vertex.prepare(
      r,
      generate("/models/gemini-2.5-flash:streamGenerateContent?alt=sse", { contents }, true),
      ctx(mock.serviceAccount),
    );
    expect(streamed.url).toMatch(/:streamGenerateContent\?alt=sse$/);
    const res = await send(streamed);
    expect(res.status).toBe(200);
    expect(res.text.startsWith("data: {")).toBe(true);
  });

  it("asks the token endpoint once however many calls are in flight", async () => {
    const r = route("gemini-2.5-flash");
    const before = mock.tokenRequests.length;
    const prepared = await Promise.all(
      Array.from({ length: 25 }, () =>
        vertex.prepare(r, generate("/models/gemini-2.5-flash:generateContent", { contents }), ctx(mock.serviceAccount)),
      ),
    );
    expect(mock.tokenRequests.length - before).toBe(1);
    expect(new Set(prepared.map((p) => p.headers.authorization)).size).toBe(1);
    expect((await Promise.all(prepared.slice(0, 3).map(send))).map((s) => s.status)).toEqual([200, 200, 200]);
  });

  it("refreshes the token before it expires", async () => {
    let now = Date.now();
    const cache = new TokenCache({ now: () => now });
    const before = mock.tokenRequests.length;
    const t1 = await vertexAccessToken(mock.serviceAccount, cache);
    now += 3599_000 - 4 * 60_000; // four minutes left: still served, a new one fetched meanwhile
    expect(await vertexAccessToken(mock.serviceAccount, cache)).toBe(t1);
    await expect.poll(() => vertexAccessToken(mock.serviceAccount, cache)).not.toBe(t1);
    expect(mock.tokenRequests.length - before).toBe(2);
  });

  it("sends Claude to rawPredict and streamRawPredict with the Vertex anthropic_version, no model, betas in the body", async () => {
    const model = "claude-sonnet-4-5@20250929";
    const r = route(model);
    const body = { model, max_tokens: 32, messages: [{ role: "user", content: "Hi" }] };
    const whole = await vertex.prepare(
      r,
      { ...generate("/messages?beta=true", body), headers: { "anthropic-beta": "context-1m-2025-08-07" } },
      ctx(mock.serviceAccount),
    );
    expect(whole.url).toBe(
      `${mock.url}/v1/projects/p-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`,
    );
    expect(JSON.parse(whole.body as string)).toEqual({
      anthropic_version: "vertex-2023-10-16",
      max_tokens: 32,
      messages: body.messages,
      anthropic_beta: ["context-1m-2025-08-07"],
    });
    expect(whole.headers).not.toHaveProperty("anthropic-beta");
    expect((await send(whole)).status).toBe(200);
    expect(mock.anthropic.requests.at(-1)!.headers["anthropic-beta"]).toBe("context-1m-2025-08-07");
    // A passthrough body is the client's bytes.
    const streamed = await vertex.prepare(
      r,
      { ...generate("/messages", {}, true), body: Buffer.from(JSON.stringify({ ...body, stream: true })) },
      ctx(mock.serviceAccount),
    );
    expect(streamed.url).toMatch(/:streamRawPredict$/);
    expect(JSON.parse(streamed.body as string)).toMatchObject({ stream: true, anthropic_version: "vertex-2023-10-16" });
    const res = await send(streamed);
    expect(res.status).toBe(200);
    expect(res.text).toContain("event: message_stop");
  });

  it("makes embeddings with :predict and reads Vertex's token counts", async () => {
    const r = route("text-embedding-005");
    const texts = ["one two three", "four five"];
    const call: ProtocolCall = {
      path: "/models/text-embedding-005:batchEmbedContents",
      body: JSON.stringify({
        requests: texts.map((text) => ({
          model: "models/text-embedding-005",
          content: { parts: [{ text }] },
          taskType: "RETRIEVAL_DOCUMENT",
          outputDimensionality: 4,
        })),
      }),
      op: "embed",
      stream: false,
    };
    const p = await vertex.prepare(r, call, ctx(mock.serviceAccount));
    expect(p.url).toMatch(/\/publishers\/google\/models\/text-embedding-005:predict$/);
    expect(JSON.parse(p.body as string)).toEqual({
      instances: texts.map((content) => ({ content, task_type: "RETRIEVAL_DOCUMENT" })),
      parameters: { outputDimensionality: 4 },
    });
    const res = await fetch(p.url, { method: "POST", headers: p.headers, body: String(p.body) });
    const upstream: UpstreamResponse = {
      status: res.status,
      headers: {},
      body: (async function* () {})(),
      text: () => res.text(),
    };
    const answered = vertex.answer!(r, call, upstream);
    const parsed = parseGeminiEmbeddingResponse(JSON.parse(await answered.text()));
    expect(parsed).toEqual({ vectors: texts.map((t) => mockEmbedding(t, 4)), promptTokens: 5 });
    // The single method's answer has its one vector.
    const one: ProtocolCall = {
      ...call,
      path: "/models/text-embedding-005:embedContent",
      body: JSON.stringify({ content: { parts: [{ text: "six" }] } }),
    };
    const p1 = await vertex.prepare(r, one, ctx(mock.serviceAccount));
    const res1 = await fetch(p1.url, { method: "POST", headers: p1.headers, body: String(p1.body) });
    const text1 = await vertex.answer!(r, one, { ...upstream, text: () => res1.text() }).text();
    expect(JSON.parse(text1)).toEqual({
      embedding: { values: mockEmbedding("six") },
      usageMetadata: { promptTokenCount: 1 },
    });
  });

  it("throws a ProviderAuthError when the token cannot be had, naming the account but not the key", async () => {
    const err = await Promise.resolve(
      vertex.prepare(
        route("gemini-2.5-flash"),
        generate("/models/m:generateContent", { contents }),
        ctx(mock.wrongKeyServiceAccount),
      ),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderAuthError);
    const message = (err as Error).message;
    expect(message).toContain(JSON.parse(mock.serviceAccount).client_email);
    expect(message).toMatch(/invalid_grant|Invalid JWT Signature/);
    expect(message).not.toContain("PRIVATE KEY");
    const notJson = await Promise.resolve(
      vertex.prepare(route("gemini-2.5-flash"), generate("/models/m:generateContent", { contents }), ctx("{not json")),
    ).catch((e: unknown) => e);
    expect(notJson).toBeInstanceOf(ProviderAuthError);
  });

  it("uses the application default credentials without a service account (GOOGLE_APPLICATION_CREDENTIALS)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vertex-adc-"));
    const file = join(dir, "adc.json");
    writeFileSync(file, mock.serviceAccount);
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    try {
      const p = await vertex.prepare(
        route("gemini-2.5-flash"),
        generate("/models/gemini-2.5-flash:generateContent", { contents }),
        ctx(undefined),
      );
      expect((await send(p)).status).toBe(200);
    } finally {
      if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads Vertex's own refusals (Google's shape) on Claude's paths", () => {
    const info = vertex.parseError!(
      429,
      {},
      JSON.stringify({ error: { code: 429, message: "Quota exceeded", status: "RESOURCE_EXHAUSTED" } }),
    );
    expect(info?.message).toBe("Quota exceeded");
    expect(
      vertex.parseError!(
        400,
        {},
        JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "x" } }),
      ),
    ).toBeNull();
  });
});
