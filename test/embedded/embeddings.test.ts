import { createOpenAI } from "@ai-sdk/openai";
import { GoogleGenAI } from "@google/genai";
import { OpenAIEmbeddings } from "@langchain/openai";
import { embed, embedMany } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream, mockEmbedding, mockTokens } from "../mocks/script.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";

// Embeddings (issue 14, section 3): OpenAI's POST /v1/embeddings and Gemini's :embedContent/:batchEmbedContents,
// translated between the two and passed through to an upstream of the same protocol, driven with the openai
// SDK, @google/genai and the AI SDK against mock upstreams. Embedding models are declared `type: embedding`,
// listed by /v1/models, billed by input tokens and counted by tpm.

type Proto = "openai" | "gemini";
const PROTOS: Proto[] = ["openai", "gemini"];
let mocks: Record<Proto, MockUpstream>;
let gw: Gateway;
let base: string;
let apiKey: string;

/** emb-<p> renames the model (translation, or the client's body with the name changed); pass-<p> keeps it. */
const emb = (p: Proto) => `emb-${p}-2025-01-01`;
const pass = (p: Proto) => `pass-${p}-embed-2025-01-01`;
const CHAT = "chat-openai-2025-01-01";
const UPSTREAM_MODEL: Record<Proto, string> = { openai: "text-embedding-mock", gemini: "gemini-embedding-mock" };
// 2 units per 1M input tokens: 2 micro-units a token.
const PRICE = { input: 2, output: 0 };

beforeAll(async () => {
  const [o, g] = await Promise.all([startOpenAIUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, gemini: g };
  const config = {
    upstreams: PROTOS.map((p) => ({
      name: `mock-${p}`,
      protocol: p,
      baseUrl: mocks[p].url,
      apiKey: "${MOCK_UPSTREAM_KEY}",
    })),
    models: [
      ...PROTOS.map((p) => ({
        id: emb(p),
        type: "embedding",
        price: PRICE,
        routes: [{ upstream: `mock-${p}`, model: UPSTREAM_MODEL[p] }],
      })),
      ...PROTOS.map((p) => ({
        id: pass(p),
        type: "embedding",
        price: PRICE,
        routes: [{ upstream: `mock-${p}`, model: pass(p) }],
      })),
      { id: CHAT, price: { input: 1, output: 1 }, routes: [{ upstream: "mock-openai", model: "gpt-mock" }] },
    ],
  };
  gw = await startGateway("embedded", { config, env: { MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY } });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "emb", balance: "100" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "emb", name: "emb" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(PROTOS.map((p) => mocks?.[p]?.close()));
});

const openai = (key = apiKey) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const gemini = () => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
const tokensOf = (texts: string[]) => texts.reduce((n, t) => n + mockTokens(t), 0);
/** The gateway's own count, for an upstream that reports none (Gemini): a token per 4 characters of input. */
const estimated = (texts: string[]) => Math.ceil(texts.reduce((n, t) => n + t.length, 0) / 4);

async function usageRow(requestId: string) {
  const rows = await eventually(
    () => gw.usage("emb", 100),
    (r) => r.some((x) => x.requestId === requestId),
  );
  return rows.find((x) => x.requestId === requestId)!;
}

describe("OpenAI clients: POST /v1/embeddings", () => {
  it("answers the openai SDK (base64 by default) from every upstream, with vectors, the model asked for, usage and the charge", async () => {
    const texts = ["The quick brown fox", "jumps over the lazy dog today"];
    for (const p of PROTOS) {
      for (const model of [emb(p), pass(p)]) {
        const { data, response } = await openai().embeddings.create({ model, input: texts }).withResponse();
        expect(data.model).toBe(model);
        expect(data.data.map((d) => d.index)).toEqual([0, 1]);
        expect(data.data.map((d) => d.embedding)).toEqual(texts.map((t) => mockEmbedding(t)));
        const tokens = p === "openai" ? tokensOf(texts) : estimated(texts);
        expect(data.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
        const row = await usageRow(response.headers.get("x-gateway-request-id")!);
        expect(row.status).toBe(200);
        expect(row.costMicro).toBe(BigInt(tokens * 2));
      }
    }
    // The openai SDK asked for base64 and decoded it; the OpenAI upstream got the client's body as it was.
    expect(mocks.openai.requests.at(-1)!.body).toMatchObject({
      model: pass("openai"),
      input: texts,
      encoding_format: "base64",
    });
    expect(mocks.openai.requests.at(-2)!.body).toMatchObject({
      model: UPSTREAM_MODEL.openai,
      encoding_format: "base64",
    });
    // A Gemini upstream got a batch naming its model in every request.
    expect(mocks.gemini.requests.at(-2)!.url).toBe(`/v1beta/models/${UPSTREAM_MODEL.gemini}:batchEmbedContents`);
    expect(mocks.gemini.requests.at(-2)!.body).toEqual({
      requests: texts.map((text) => ({ model: `models/${UPSTREAM_MODEL.gemini}`, content: { parts: [{ text }] } })),
    });
  });

  it("takes a single string, dimensions and encoding_format float, and answers floats", async () => {
    for (const p of PROTOS) {
      const res = await fetch(`${base}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: emb(p), input: "hello world", dimensions: 4, encoding_format: "float" }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { object: string; data: { object: string; embedding: number[] }[] };
      expect(body.object).toBe("list");
      expect(body.data).toEqual([{ object: "embedding", index: 0, embedding: mockEmbedding("hello world", 4) }]);
    }
    expect(mocks.gemini.requests.at(-1)!.body).toEqual({
      requests: [
        {
          model: `models/${UPSTREAM_MODEL.gemini}`,
          content: { parts: [{ text: "hello world" }] },
          outputDimensionality: 4,
        },
      ],
    });
    expect(mocks.openai.requests.at(-1)!.body).toMatchObject({
      input: "hello world",
      dimensions: 4,
      encoding_format: "float",
    });
  });

  it("serves the AI SDK's embed and embedMany", async () => {
    const provider = createOpenAI({ baseURL: `${base}/v1`, apiKey });
    for (const p of PROTOS) {
      const one = await embed({ model: provider.embedding(emb(p)), value: "sunny day at the beach" });
      expect(one.embedding).toEqual(mockEmbedding("sunny day at the beach"));
      expect(one.usage.tokens).toBe(p === "openai" ? 5 : estimated(["sunny day at the beach"]));
      const many = await embedMany({ model: provider.embedding(emb(p)), values: ["rainy", "snowy night"] });
      expect(many.embeddings).toEqual([mockEmbedding("rainy"), mockEmbedding("snowy night")]);
    }
  });

  it("serves LangChain's OpenAIEmbeddings", async () => {
    for (const p of PROTOS) {
      const lc = new OpenAIEmbeddings({
        model: emb(p),
        apiKey,
        configuration: { baseURL: `${base}/v1` },
        maxRetries: 0,
      });
      expect(await lc.embedQuery("a question")).toEqual(mockEmbedding("a question"));
      expect(await lc.embedDocuments(["doc one", "doc two"])).toEqual([
        mockEmbedding("doc one"),
        mockEmbedding("doc two"),
      ]);
    }
  });

  it("passes token-id input to an OpenAI upstream and refuses it in a translation, naming it", async () => {
    const ok = await openai().embeddings.create({ model: emb("openai"), input: [[1, 2, 3]], encoding_format: "float" });
    expect(ok.data[0]!.embedding).toEqual(mockEmbedding("[1,2,3]"));
    expect(ok.usage.prompt_tokens).toBe(3);
    const calls = mocks.gemini.requests.length;
    const err = await openai()
      .embeddings.create({ model: emb("gemini"), input: [[1, 2, 3]] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect({ code: err!.code, param: err!.param }).toEqual({ code: "unsupported_parameter", param: "input" });
    expect(mocks.gemini.requests.length).toBe(calls);
  });

  it("refuses a chat model on /v1/embeddings and an embedding model on chat, naming the endpoint, and logs and charges nothing", async () => {
    const onEmbeddings = await openai()
      .embeddings.create({ model: CHAT, input: "x" })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect({ status: onEmbeddings!.status, code: onEmbeddings!.code, param: onEmbeddings!.param }).toEqual({
      status: 400,
      code: "wrong_model_type",
      param: "model",
    });
    const onChat = await openai()
      .chat.completions.create({ model: emb("openai"), messages: [{ role: "user", content: "x" }] })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect({ status: onChat!.status, code: onChat!.code }).toEqual({ status: 400, code: "wrong_model_type" });
    expect(onChat!.message).toContain("POST /v1/embeddings");
    const unknown = await openai()
      .embeddings.create({ model: "no-such-embedder-2000-01-01", input: "x" })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    // Usage events arrive in order: once a later call's row is in, a refusal's row would be too.
    const { response } = await openai()
      .embeddings.create({ model: pass("openai"), input: "after" })
      .withResponse();
    const rows = (await usageRow(response.headers.get("x-gateway-request-id")!)) && (await gw.usage("emb", 100));
    const refused = [onEmbeddings, onChat, unknown].map((e) => e!.headers!.get("x-gateway-request-id"));
    expect(rows.filter((r) => refused.includes(r.requestId))).toEqual([]);
  });
});

describe("Gemini clients: :embedContent and :batchEmbedContents", () => {
  it("answers @google/genai embedContent (one text and many) from every upstream", async () => {
    for (const p of PROTOS) {
      for (const model of [emb(p), pass(p)]) {
        const one = await gemini().models.embedContent({ model, contents: "what is the meaning of life" });
        expect(one.embeddings!.map((e) => e.values)).toEqual([mockEmbedding("what is the meaning of life")]);
        const many = await gemini().models.embedContent({
          model,
          contents: ["alpha", "beta gamma"],
          config: { outputDimensionality: 5 },
        });
        expect(many.embeddings!.map((e) => e.values)).toEqual([
          mockEmbedding("alpha", 5),
          mockEmbedding("beta gamma", 5),
        ]);
      }
    }
    // Toward OpenAI: one request with every text and the dimensions.
    expect(mocks.openai.requests.at(-1)!.body).toEqual({
      model: pass("openai"),
      input: ["alpha", "beta gamma"],
      encoding_format: "float",
      dimensions: 5,
    });
    // Toward Gemini under another name: the client's batch, each request's model renamed.
    const renamed = mocks.gemini.requests.at(-3)!;
    expect(renamed.url).toBe(`/v1beta/models/${UPSTREAM_MODEL.gemini}:batchEmbedContents`);
    expect((renamed.body as { requests: { model: string }[] }).requests.map((r) => r.model)).toEqual([
      `models/${UPSTREAM_MODEL.gemini}`,
      `models/${UPSTREAM_MODEL.gemini}`,
    ]);
  });

  it("answers :embedContent in its own shape, with the key in x-goog-api-key or ?key=, billed by input tokens", async () => {
    for (const p of PROTOS) {
      const res = await fetch(`${base}/v1beta/models/${emb(p)}:embedContent?key=${apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: { parts: [{ text: "one two" }, { text: "three" }] } }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ embedding: { values: mockEmbedding("one two\nthree") } });
      const row = await usageRow(res.headers.get("x-gateway-request-id")!);
      expect(row.costMicro).toBe(BigInt(2 * (p === "openai" ? 3 : estimated(["one two\nthree"]))));
    }
  });

  it("passes taskType to a Gemini upstream and refuses it toward OpenAI, in Gemini's error shape", async () => {
    const body = JSON.stringify({
      content: { parts: [{ text: "doc" }] },
      taskType: "RETRIEVAL_DOCUMENT",
      title: "A title",
    });
    const headers = { "x-goog-api-key": apiKey, "content-type": "application/json" };
    const ok = await fetch(`${base}/v1beta/models/${emb("gemini")}:embedContent`, { method: "POST", headers, body });
    expect(ok.status).toBe(200);
    expect(mocks.gemini.requests.at(-1)!.body).toMatchObject({ taskType: "RETRIEVAL_DOCUMENT", title: "A title" });
    const refused = await fetch(`${base}/v1beta/models/${emb("openai")}:embedContent`, {
      method: "POST",
      headers,
      body,
    });
    expect(refused.status).toBe(400);
    const err = (await refused.json()) as { error: { code: number; status: string; message: string } };
    expect(err.error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(err.error.message).toContain("'taskType'");
    expect(err.error.message).toContain(`request id: ${refused.headers.get("x-gateway-request-id")}`);
  });
});

describe("model list and limits", () => {
  it("lists embedding models in every protocol's model list, with Gemini's embedding methods", async () => {
    const list = await openai().models.list();
    expect(list.data.map((m) => m.id)).toEqual(expect.arrayContaining([emb("openai"), emb("gemini"), CHAT]));
    const g = (await (await fetch(`${base}/v1beta/models`, { headers: { "x-goog-api-key": apiKey } })).json()) as {
      models: { name: string; supportedGenerationMethods: string[] }[];
    };
    expect(g.models.find((m) => m.name === `models/${emb("gemini")}`)!.supportedGenerationMethods).toEqual([
      "embedContent",
      "batchEmbedContents",
    ]);
    expect(g.models.find((m) => m.name === `models/${CHAT}`)!.supportedGenerationMethods).toEqual([
      "generateContent",
      "streamGenerateContent",
    ]);
  });

  it("counts embedding input against the key's tpm", async () => {
    const limited = await gw.admin<{ key: string }>("key create", { account: "emb", name: "tpm", tpm: "60" });
    await waitForKey(gw, limited.key);
    // 40 words the mock counts as 40 tokens; the request's body is estimated at about 35 before it is sent.
    const input = Array.from({ length: 40 }, () => "a").join(" ");
    const first = await openai(limited.key).embeddings.create({
      model: pass("openai"),
      input,
      encoding_format: "float",
    });
    expect(first.usage.prompt_tokens).toBe(40);
    const second = await openai(limited.key)
      .embeddings.create({ model: pass("openai"), input, encoding_format: "float" })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(second).toBeInstanceOf(OpenAI.RateLimitError);
    expect(second!.code).toBe("rate_limit_exceeded");
  });
});
