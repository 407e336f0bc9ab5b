import { DefaultAzureCredential, getBearerTokenProvider } from "@azure/identity";
import OpenAI, { AzureOpenAI } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AzureMock, startAzureUpstream } from "../mocks/azure-upstream.ts";

// The mock Azure OpenAI is proven with the openai SDK's own AzureOpenAI client (the deployments form) and the
// plain OpenAI client on the v1 form: it takes what they send, answers what they read, and refuses a wrong
// key or a missing api-version as Azure does.

let mock: AzureMock;

beforeAll(async () => {
  mock = await startAzureUpstream({ deployments: ["gpt-4o-prod", "embed-prod"], entraToken: "entra-token-1" });
});
afterAll(async () => mock?.close());

const azure = (o: { apiKey?: string; apiVersion?: string; deployment?: string } = {}) =>
  new AzureOpenAI({
    endpoint: mock.url,
    apiKey: o.apiKey ?? mock.apiKey,
    apiVersion: o.apiVersion ?? "2024-10-21",
    deployment: o.deployment ?? "gpt-4o-prod",
    maxRetries: 0,
  });

describe("mock Azure OpenAI, driven by the openai SDK's AzureOpenAI", () => {
  it("answers chat completions on the deployment's path with the api-key header and api-version", async () => {
    const res = await azure().chat.completions.create({
      model: "ignored-by-azure",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(res.choices[0]!.message.content).toBe("Hello from the mock.");
    expect(res.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    const sent = mock.requests.at(-1)!;
    expect(sent.url).toBe("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
    expect(sent.headers["api-key"]).toBe(mock.apiKey);
    expect((res as unknown as { prompt_filter_results: unknown[] }).prompt_filter_results).toHaveLength(1);
  });

  it("streams with Azure's opening prompt_filter_results chunk, which the SDK reads as a chunk without choices", async () => {
    const stream = await azure().chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices).toEqual([]);
    expect((chunks[0] as unknown as { prompt_filter_results: unknown[] }).prompt_filter_results).toHaveLength(1);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("Hello from the mock.");
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
  });

  it("marks a content-filtered answer with finish_reason content_filter and its filtered category", async () => {
    mock.openai.reply({ text: ["I cannot"], finish: "content_filter" });
    const res = await azure().chat.completions.create({ model: "x", messages: [{ role: "user", content: "Hi" }] });
    expect(res.choices[0]!.finish_reason).toBe("content_filter");
    expect(res.choices[0]).toMatchObject({ content_filter_results: { violence: { filtered: true } } });
  });

  it("answers embeddings on the deployment's path and Responses on /openai/responses", async () => {
    const emb = await azure({ deployment: "embed-prod" }).embeddings.create({
      model: "x",
      input: ["one two three"],
    });
    expect(emb.data).toHaveLength(1);
    expect(mock.requests.at(-1)!.url).toBe("/openai/deployments/embed-prod/embeddings?api-version=2024-10-21");
    const r = await azure({ apiVersion: "2025-04-01-preview" }).responses.create({ model: "gpt-4o-prod", input: "Hi" });
    expect(r.output_text).toBe("Hello from the mock.");
    expect(mock.requests.at(-1)!.url).toBe("/openai/responses?api-version=2025-04-01-preview");
  });

  it("answers the v1 form on OpenAI's own paths without an api-version", async () => {
    const client = new OpenAI({
      baseURL: `${mock.url}/openai/v1`,
      apiKey: "unused",
      defaultHeaders: { "api-key": mock.apiKey },
      maxRetries: 0,
    });
    const res = await client.chat.completions.create({
      model: "gpt-4o-prod",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(res.choices[0]!.message.content).toBe("Hello from the mock.");
    expect(mock.requests.at(-1)!.url).toBe("/openai/v1/chat/completions");
  });

  it("takes an Entra ID bearer from @azure/identity's DefaultAzureCredential (its managed identity endpoint)", async () => {
    const saved = { endpoint: process.env.IDENTITY_ENDPOINT, header: process.env.IDENTITY_HEADER };
    process.env.IDENTITY_ENDPOINT = mock.identityEndpoint;
    process.env.IDENTITY_HEADER = mock.identityHeader;
    try {
      const client = new AzureOpenAI({
        endpoint: mock.url,
        apiVersion: "2024-10-21",
        deployment: "gpt-4o-prod",
        azureADTokenProvider: getBearerTokenProvider(
          new DefaultAzureCredential(),
          "https://cognitiveservices.azure.com/.default",
        ),
        maxRetries: 0,
      });
      const res = await client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "Hi" }] });
      expect(res.choices[0]!.message.content).toBe("Hello from the mock.");
      expect(mock.requests.at(-1)!.headers.authorization).toBe("Bearer entra-token-1");
      expect(mock.requests.at(-1)!.headers["api-key"]).toBeUndefined();
    } finally {
      for (const [k, v] of [
        ["IDENTITY_ENDPOINT", saved.endpoint],
        ["IDENTITY_HEADER", saved.header],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
    const wrong = await fetch(
      `${mock.identityEndpoint}?api-version=2019-08-01&resource=https://cognitiveservices.azure.com`,
    );
    expect(wrong.status).toBe(401);
    const forged = await fetch(`${mock.url}/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21`, {
      method: "POST",
      headers: { authorization: "Bearer forged", "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(forged.status).toBe(401);
  });

  it("refuses a wrong key (401), an unsupported or missing api-version (404) and an unknown deployment", async () => {
    const status = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (e: { status?: number }) => e.status,
      );
    const messages = [{ role: "user" as const, content: "Hi" }];
    expect(await status(azure({ apiKey: "wrong" }).chat.completions.create({ model: "x", messages }))).toBe(401);
    expect(await status(azure({ apiVersion: "2019-01-01" }).chat.completions.create({ model: "x", messages }))).toBe(
      404,
    );
    const noVersion = await fetch(`${mock.url}/openai/deployments/gpt-4o-prod/chat/completions`, {
      method: "POST",
      headers: { "api-key": mock.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ messages }),
    });
    expect(noVersion.status).toBe(404);
    const err = await azure({ deployment: "nope" })
      .chat.completions.create({ model: "x", messages })
      .catch((e: { status?: number; code?: string }) => e);
    expect(err).toMatchObject({ status: 404, code: "DeploymentNotFound" });
  });
});
