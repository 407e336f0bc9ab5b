import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AzureMock, startAzureUpstream } from "../../../../test/mocks/azure-upstream.ts";
import type { RouteSnapshot } from "../../contract/index.ts";
import { TokenCache } from "../token-cache.ts";
import { type ProtocolCall, type ProviderContext, type ProviderRequest, ProviderAuthError } from "../types.ts";
import { COGNITIVE_SERVICES_SCOPE, entraToken, entraTokens } from "./entra.ts";
import { azureOpenAI, azureUrl } from "./index.ts";

// The Azure OpenAI provider: both URL forms, api-key or an Entra ID bearer, against the mock Azure resource
// (which enforces api-key and api-version).

let mock: AzureMock;
beforeAll(async () => {
  mock = await startAzureUpstream({ deployments: ["gpt-4o-prod", "embed-prod"], entraToken: "entra-test-token" });
});
afterAll(async () => mock?.close());
beforeEach(() => entraTokens.clear());

const route = (
  model: string,
  o: { apiVersion?: string; baseUrl?: string; auth?: string; protocol?: "openai" | "openai-responses" } = {},
): RouteSnapshot => {
  const providerOptions: Record<string, string> = {};
  if (o.apiVersion !== undefined) providerOptions.apiVersion = o.apiVersion;
  if (o.auth !== undefined) providerOptions.auth = o.auth;
  return {
    upstream: "azure",
    protocol: azureOpenAI.protocolFor(model, o.protocol ?? null),
    baseUrl: o.baseUrl ?? mock.url,
    apiKeyEnc: "sealed",
    upstreamModel: model,
    weight: 1,
    priority: 0,
    connectTimeoutMs: 1000,
    firstByteTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    provider: "azure-openai",
    providerOptions,
  };
};

const ctx = (key: string | null = mock.apiKey): ProviderContext => ({
  apiKey: () => key,
  secrets: () => ({}),
  logger: { warn: () => undefined, error: () => undefined },
});

const call = (path: string, body: object, op: "generate" | "embed" = "generate"): ProtocolCall => ({
  path,
  body: JSON.stringify(body),
  op,
  stream: false,
});

const send = async (p: ProviderRequest) => {
  const res = await fetch(p.url, { method: "POST", headers: p.headers, body: String(p.body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};

const messages = [{ role: "user", content: "Hi" }];

describe("azure-openai provider", () => {
  it("builds the deployments form's URLs, and the v1 form's without an apiVersion", () => {
    const dep = route("gpt-4o-prod", { apiVersion: "2024-10-21", baseUrl: "https://res.openai.azure.com/" });
    expect(azureUrl(dep, call("/chat/completions", {}))).toBe(
      "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21",
    );
    expect(azureUrl(dep, call("/embeddings", {}, "embed"))).toBe(
      "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/embeddings?api-version=2024-10-21",
    );
    expect(azureUrl({ ...dep, baseUrl: "https://res.openai.azure.com/openai" }, call("/responses?x=1", {}))).toBe(
      "https://res.openai.azure.com/openai/responses?x=1&api-version=2024-10-21",
    );
    const v1 = route("gpt-4o-prod", { baseUrl: "https://res.openai.azure.com/openai/v1" });
    expect(azureUrl(v1, call("/chat/completions", {}))).toBe("https://res.openai.azure.com/openai/v1/chat/completions");
    expect(azureUrl({ ...v1, baseUrl: "https://res.openai.azure.com" }, call("/responses", {}))).toBe(
      "https://res.openai.azure.com/openai/v1/responses",
    );
  });

  it("reads Azure's DeploymentNotFound as an unknown model", () => {
    const body = JSON.stringify({
      error: { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist." },
    });
    expect(azureOpenAI.parseError!(404, {}, body)).toMatchObject({ code: "model_not_found" });
    expect(
      azureOpenAI.parseError!(404, {}, JSON.stringify({ error: { code: "404", message: "Resource not found" } })),
    ).toBeNull();
  });

  it("speaks openai by default, openai-responses when configured, nothing else", () => {
    expect(azureOpenAI.protocolFor("gpt-4o", null)).toBe("openai");
    expect(azureOpenAI.protocolFor("gpt-4o", "openai-responses")).toBe("openai-responses");
    expect(() => azureOpenAI.protocolFor("gpt-4o", "anthropic")).toThrow(/openai/);
  });

  it("reaches chat completions, embeddings and Responses on the mock with the api-key header", async () => {
    const chat = await azureOpenAI.prepare(
      route("gpt-4o-prod", { apiVersion: "2024-10-21" }),
      { ...call("/chat/completions", { model: "gpt-4o-prod", messages }), headers: { authorization: "Bearer client" } },
      ctx(),
    );
    expect(chat.headers).toMatchObject({ "api-key": mock.apiKey });
    expect(chat.headers).not.toHaveProperty("authorization");
    const answered = await send(chat);
    expect(answered.status).toBe(200);
    expect(answered.json.prompt_filter_results).toBeDefined();
    const emb = await azureOpenAI.prepare(
      route("embed-prod", { apiVersion: "2024-10-21" }),
      call("/embeddings", { model: "embed-prod", input: ["a b"] }, "embed"),
      ctx(),
    );
    expect((await send(emb)).status).toBe(200);
    const resp = await azureOpenAI.prepare(
      route("gpt-4o-prod", { apiVersion: "2025-04-01-preview", protocol: "openai-responses" }),
      call("/responses", { model: "gpt-4o-prod", input: "Hi" }),
      ctx(),
    );
    expect((await send(resp)).status).toBe(200);
    const v1 = await azureOpenAI.prepare(
      route("gpt-4o-prod", { baseUrl: `${mock.url}/openai/v1` }),
      call("/chat/completions", { model: "gpt-4o-prod", messages }),
      ctx(),
    );
    expect((await send(v1)).status).toBe(200);
    expect(mock.requests.at(-1)!.url).toBe("/openai/v1/chat/completions");
  });

  it("refuses to call without a key unless auth is entra, and sends Entra's bearer then", async () => {
    const r = route("gpt-4o-prod", { apiVersion: "2024-10-21" });
    await expect(
      Promise.resolve(azureOpenAI.prepare(r, call("/chat/completions", { messages }), ctx(null))),
    ).rejects.toBeInstanceOf(ProviderAuthError);
    await entraTokens.get("default", async () => ({ token: "entra-test-token", expiresAt: Date.now() + 3_600_000 }));
    const entra = await azureOpenAI.prepare(
      route("gpt-4o-prod", { apiVersion: "2024-10-21", auth: "entra" }),
      call("/chat/completions", { messages }),
      ctx(null),
    );
    expect(entra.headers).toMatchObject({ authorization: "Bearer entra-test-token" });
    expect(entra.headers).not.toHaveProperty("api-key");
    expect((await send(entra)).status).toBe(200);
  });

  it("asks DefaultAzureCredential for the Cognitive Services scope once for concurrent calls; its failure is a ProviderAuthError", async () => {
    const scopes: string[] = [];
    const credential = {
      getToken: async (scope: string | string[]) => {
        scopes.push(String(scope));
        return { token: "t-1", expiresOnTimestamp: Date.now() + 3_600_000 };
      },
    };
    const cache = new TokenCache();
    const got = await Promise.all(Array.from({ length: 10 }, () => entraToken(cache, async () => credential)));
    expect(new Set(got)).toEqual(new Set(["t-1"]));
    expect(scopes).toEqual([COGNITIVE_SERVICES_SCOPE]);
    const failing = { getToken: async () => Promise.reject(new Error("CredentialUnavailableError: no identity")) };
    await expect(entraToken(new TokenCache(), async () => failing)).rejects.toBeInstanceOf(ProviderAuthError);
  });
});
