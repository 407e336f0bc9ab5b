import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { usageRowOf } from "../helpers/usage-row.ts";
import { compat } from "../helpers/compat.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { type SdkCall, chatViaOpenAI, generateViaGenai, messagesViaAnthropic } from "../helpers/provider-suite.ts";
import { type AzureMock, startAzureUpstream } from "../mocks/azure-upstream.ts";
import { type MockUsage, mockEmbedding, mockTokens } from "../mocks/script.ts";

// Azure OpenAI through the gateway (issue 27, item 1), configured as operators write it (provider:
// azure-openai, baseUrl, apiKey, apiVersion), against the mock Azure resource, which takes only its api-key
// and a supported api-version, and answers with Azure's content-filter annotations: streams opening with a
// prompt_filter_results chunk without choices, content_filter_results on every choice (proven with the openai
// SDK's AzureOpenAI in test/unit/azure-mock.test.ts). Each client protocol's official SDK reaches a deployment,
// streamed and not, with usage and cost exact; Responses and embeddings; the v1 form; and Azure's content
// filter reaches each client as its own content-filter finish.

const MODEL = "gpt-4o-on-azure";
const DEPLOYMENT = "gpt-4o-prod";
// $2.50 / $10 per million tokens, cache reads $1.25: micro-units per token 2.5, 10, 1.25.
const PRICE = { input: 2.5, output: 10, cachedInput: 1.25 };
const USAGE: MockUsage = { promptTokens: 1000, cachedTokens: 400, completionTokens: 50 };
// 600 input × 2.5 + 400 read × 1.25 + 50 output × 10 = 1500 + 500 + 500
const COST = "2500";

let mock: AzureMock;
let gw: Gateway;
let base: string;
let key: string;

beforeAll(async () => {
  mock = await startAzureUpstream({
    deployments: [DEPLOYMENT, "embed-prod"],
    entraToken: "entra-managed-identity-token",
  });
  const azure = { provider: "azure-openai", baseUrl: mock.url, apiKey: "${AZURE_OPENAI_API_KEY}" };
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "azure", ...azure, apiVersion: "2024-10-21" },
        { name: "azure-responses", ...azure, protocol: "openai-responses", apiVersion: "2025-04-01-preview" },
        { name: "azure-v1", ...azure, baseUrl: `${mock.url}/openai/v1` },
        { name: "azure-wrong-key", ...azure, apiKey: "not-the-key", apiVersion: "2024-10-21" },
        { name: "azure-entra", provider: "azure-openai", baseUrl: mock.url, apiVersion: "2024-10-21", auth: "entra" },
      ],
      models: [
        { id: MODEL, price: PRICE, routes: [{ upstream: "azure", model: DEPLOYMENT }] },
        { id: "gpt-4o-responses-on-azure", price: PRICE, routes: [{ upstream: "azure-responses", model: DEPLOYMENT }] },
        { id: "gpt-4o-v1-on-azure", price: PRICE, routes: [{ upstream: "azure-v1", model: DEPLOYMENT }] },
        { id: "embed-on-azure", type: "embedding", price: PRICE, routes: [{ upstream: "azure", model: "embed-prod" }] },
        { id: "wrong-key-on-azure", price: PRICE, routes: [{ upstream: "azure-wrong-key", model: DEPLOYMENT }] },
        { id: "entra-on-azure", price: PRICE, routes: [{ upstream: "azure-entra", model: DEPLOYMENT }] },
        { id: "no-deployment-on-azure", price: PRICE, routes: [{ upstream: "azure", model: "gpt-5-nowhere" }] },
      ],
    },
    // The data plane's managed identity (App Service's), which DefaultAzureCredential finds in the environment.
    env: {
      AZURE_OPENAI_API_KEY: mock.apiKey,
      IDENTITY_ENDPOINT: mock.identityEndpoint,
      IDENTITY_HEADER: mock.identityHeader,
    },
  });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "azure", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "azure" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

async function expectBilled(requestId: string | null, model = MODEL): Promise<void> {
  expect(requestId).toMatch(/^req_/);
  expect(await usageRowOf(gw, "azure", requestId!)).toMatchObject({
    model,
    status: 200,
    promptTokens: USAGE.promptTokens,
    completionTokens: USAGE.completionTokens,
    cachedTokens: USAGE.cachedTokens,
    costMicro: COST,
    estimated: false,
  });
}

const CHAT_PATH = `/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21`;
const last = () => mock.requests.at(-1)!;
const script = (finish?: "content_filter") =>
  mock.openai.reply({ text: ["Hello", " from", " Azure."], usage: USAGE, ...(finish ? { finish } : {}) });

/** One SDK call to the deployment, and what Azure was scripted to answer. */
const call = (stream: boolean): SdkCall => ({
  base,
  key,
  stream,
  model: MODEL,
  text: "Hello from Azure.",
  usage: USAGE,
});

describe("Azure OpenAI through the gateway", () => {
  for (const stream of [false, true]) {
    const how = stream ? "streamed" : "not streamed";

    it(`openai SDK → a deployment, ${how}: passes through with the api-key; usage and bill ${compat("openai-sdk", "azure-openai", stream ? "stream" : "text", "usage")}`, async () => {
      script();
      const requestId = await chatViaOpenAI(call(stream));
      expect(last().url).toBe(CHAT_PATH);
      expect(last().headers["api-key"]).toBe(mock.apiKey);
      expect(last().headers.authorization).toBeUndefined();
      await expectBilled(requestId);
    });

    it(`Anthropic SDK → a deployment, ${how}: translated; usage and bill ${compat("anthropic-sdk", "azure-openai", stream ? "stream" : "text", "usage")}`, async () => {
      script();
      const { msg, requestId } = await messagesViaAnthropic(call(stream));
      expect(msg.usage).toMatchObject({ input_tokens: 600, cache_read_input_tokens: 400, output_tokens: 50 });
      expect(last().url).toBe(CHAT_PATH);
      await expectBilled(requestId);
    });

    it(`@google/genai → a deployment, ${how}: translated; usage and bill ${compat("genai-sdk", "azure-openai", stream ? "stream" : "text", "usage")}`, async () => {
      script();
      const requestId = await generateViaGenai(call(stream));
      expect(last().url).toBe(CHAT_PATH);
      await expectBilled(requestId);
    });

    it(`openai SDK's Responses → the Responses upstream (/openai/responses), ${how}; usage and bill`, async () => {
      script();
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
      const model = "gpt-4o-responses-on-azure";
      let text: string;
      let usage: OpenAI.Responses.ResponseUsage | undefined;
      let requestId: string | null;
      if (!stream) {
        const { data, response } = await client.responses.create({ model, input: "Hi" }).withResponse();
        requestId = response.headers.get("x-gateway-request-id");
        text = data.output_text;
        usage = data.usage;
      } else {
        const { data, response } = await client.responses.create({ model, input: "Hi", stream: true }).withResponse();
        requestId = response.headers.get("x-gateway-request-id");
        text = "";
        for await (const ev of data) {
          if (ev.type === "response.output_text.delta") text += ev.delta;
          if (ev.type === "response.completed") usage = ev.response.usage;
        }
      }
      expect(text).toBe("Hello from Azure.");
      expect(usage).toMatchObject({
        input_tokens: 1000,
        output_tokens: 50,
        input_tokens_details: { cached_tokens: 400 },
      });
      expect(last().url).toBe("/openai/responses?api-version=2025-04-01-preview");
      expect(last().body).toMatchObject({ model: DEPLOYMENT });
      await expectBilled(requestId, model);
    });
  }

  it("the v1 form: OpenAI's own paths under /openai/v1, no api-version", async () => {
    script();
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: "gpt-4o-v1-on-azure", messages: [{ role: "user", content: "Hi" }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe("Hello from Azure.");
    expect(last().url).toBe("/openai/v1/chat/completions");
    expect(last().body).toMatchObject({ model: DEPLOYMENT });
    await expectBilled(response.headers.get("x-gateway-request-id"), "gpt-4o-v1-on-azure");
  });

  it("auth: entra sends a bearer from DefaultAzureCredential (here the managed identity), asked for once", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.chat.completions.create({ model: "entra-on-azure", messages: [{ role: "user", content: "Hi" }] }),
      ),
    );
    expect(answers.map((a) => a.choices[0]!.message.content)).toEqual(Array(5).fill("Hello from the mock."));
    const sent = mock.requests.slice(-5);
    expect(sent.map((r) => r.headers.authorization)).toEqual(Array(5).fill("Bearer entra-managed-identity-token"));
    expect(sent.map((r) => r.headers["api-key"])).toEqual(Array(5).fill(undefined));
    expect(mock.identityRequests).toBe(1);
  });

  it("embeddings on the deployment's path, for the openai SDK and @google/genai, billed by Azure's count", async () => {
    const texts = ["The quick brown fox", "jumps over"];
    const tokens = texts.reduce((n, t) => n + mockTokens(t), 0);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.embeddings.create({ model: "embed-on-azure", input: texts }).withResponse();
    expect(data.data.map((d) => d.embedding)).toEqual(texts.map((t) => mockEmbedding(t)));
    expect(data.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    expect(last().url).toBe("/openai/deployments/embed-prod/embeddings?api-version=2024-10-21");
    const r = await usageRowOf(gw, "azure", response.headers.get("x-gateway-request-id")!);
    expect(r).toMatchObject({ status: 200, promptTokens: tokens, costMicro: String(tokens * 2.5), estimated: false });
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base, apiVersion: "v1beta" } });
    const one = await ai.models.embedContent({ model: "embed-on-azure", contents: "jumps over" });
    expect(one.embeddings?.map((e) => e.values)).toEqual([mockEmbedding("jumps over")]);
  });

  describe("Azure's content filter reaches each client as its own content-filter finish", () => {
    for (const stream of [false, true]) {
      const how = stream ? "streamed" : "not streamed";

      it(`openai SDK, ${how}: finish_reason content_filter`, async () => {
        script("content_filter");
        const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
        const params = { model: MODEL, messages: [{ role: "user" as const, content: "Hi" }] };
        let finish: string | null = null;
        if (!stream) finish = (await client.chat.completions.create(params)).choices[0]!.finish_reason;
        else
          for await (const c of await client.chat.completions.create({ ...params, stream: true }))
            finish = c.choices[0]?.finish_reason ?? finish;
        expect(finish).toBe("content_filter");
      });

      it(`Anthropic SDK, ${how}: stop_reason refusal`, async () => {
        script("content_filter");
        const client = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
        const params = { model: MODEL, max_tokens: 100, messages: [{ role: "user" as const, content: "Hi" }] };
        const msg = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
        expect(msg.stop_reason).toBe("refusal");
      });

      it(`@google/genai, ${how}: finishReason SAFETY`, async () => {
        script("content_filter");
        const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base, apiVersion: "v1beta" } });
        const req = { model: MODEL, contents: "Hi" };
        let finish: string | undefined;
        if (!stream) finish = (await ai.models.generateContent(req)).candidates?.[0]?.finishReason;
        else
          for await (const c of await ai.models.generateContentStream(req))
            finish = c.candidates?.[0]?.finishReason ?? finish;
        expect(finish).toBe("SAFETY");
      });

      it(`openai SDK's Responses (translated to chat), ${how}: incomplete for content_filter`, async () => {
        script("content_filter");
        const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
        let status: string | undefined;
        let reason: string | undefined;
        if (!stream) {
          const r = await client.responses.create({ model: MODEL, input: "Hi" });
          status = r.status;
          reason = r.incomplete_details?.reason;
        } else {
          for await (const ev of await client.responses.create({ model: MODEL, input: "Hi", stream: true })) {
            if (ev.type === "response.incomplete") {
              status = ev.response.status;
              reason = ev.response.incomplete_details?.reason;
            }
          }
        }
        expect([status, reason]).toEqual(["incomplete", "content_filter"]);
      });
    }
  });

  it("Azure's refusals in the client's terms: a wrong key 502 upstream_auth_failed, an unknown deployment, a bad request 400", async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] }).then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    const auth = await ask("wrong-key-on-azure");
    expect([auth?.status, (auth?.error as { code?: string })?.code]).toEqual([502, "upstream_auth_failed"]);
    expect(auth?.message).toMatch(/request id: req_/);
    const missing = await ask("no-deployment-on-azure");
    expect([missing?.status, (missing?.error as { code?: string })?.code]).toEqual([502, "upstream_model_not_found"]);
    mock.openai.reply({ error: { status: 400, message: "Invalid 'messages[0].content': string too long." } });
    const invalid = await ask(MODEL);
    expect(invalid?.status).toBe(400);
    expect(invalid?.message).toContain("string too long");
  });
});
