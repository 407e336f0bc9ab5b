import { GoogleAuth, JWT, gaxios } from "google-auth-library";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type VertexMock, startVertexUpstream } from "../mocks/vertex-upstream.ts";

// The mock Vertex is proven with Google's own client, google-auth-library: its JWT-bearer exchange is accepted
// only with the service account's key, its token opens the model endpoints, and anything else is refused.
// (google-auth-library posts its exchange to Google's token URL whatever the key file's token_uri says; the
// transporter sends it to the mock instead, which is how the gateway honours token_uri too.)

let mock: VertexMock;

beforeAll(async () => {
  mock = await startVertexUpstream({ project: "proof-project", region: "europe-west4" });
});
afterAll(async () => mock?.close());

const transporter = () => {
  const t = new gaxios.Gaxios({ retry: false });
  t.interceptors.request.add({
    resolved: async (config) => {
      if (config.url.href === "https://oauth2.googleapis.com/token") config.url = new URL(mock.tokenUri);
      return config;
    },
  });
  return t;
};

const jwtOf = (keyFileText: string) => {
  const sa = JSON.parse(keyFileText) as { client_email: string; private_key: string; private_key_id: string };
  return new JWT({
    email: sa.client_email,
    key: sa.private_key,
    keyId: sa.private_key_id,
    scopes: ["https://www.googleapis.com/auth/cloud-platform"],
    transporter: transporter(),
  });
};

const modelUrl = (publisher: string, model: string, method: string) =>
  `${mock.url}/v1/projects/proof-project/locations/europe-west4/publishers/${publisher}/models/${model}:${method}`;

describe("mock Vertex AI, driven by google-auth-library", () => {
  it("issues an access token for an assertion signed with the service account's key, and the token opens generateContent", async () => {
    const client = jwtOf(mock.serviceAccount);
    const before = mock.tokenRequests.length;
    const res = await client.request<{ candidates: { content: { parts: { text: string }[] } }[] }>({
      url: modelUrl("google", "gemini-2.5-flash", "generateContent"),
      method: "POST",
      data: { contents: [{ role: "user", parts: [{ text: "Hi" }] }] },
    });
    expect(res.status).toBe(200);
    expect(res.data.candidates[0]!.content.parts.map((p) => p.text).join("")).toBe("Hello from the mock.");
    const exchange = mock.tokenRequests.slice(before);
    expect(exchange).toHaveLength(1);
    expect(exchange[0]!.issued).not.toBeNull();
    expect(exchange[0]!.claims).toMatchObject({
      iss: JSON.parse(mock.serviceAccount).client_email,
      scope: "https://www.googleapis.com/auth/cloud-platform",
    });
    expect(mock.requests.at(-1)!.headers.authorization).toBe(`Bearer ${exchange[0]!.issued}`);
  });

  it("streams Claude through streamRawPredict with anthropic_version in the body and no model", async () => {
    const client = jwtOf(mock.serviceAccount);
    const res = await client.request<string>({
      url: modelUrl("anthropic", "claude-sonnet-4-5@20250929", "streamRawPredict"),
      method: "POST",
      responseType: "text",
      data: {
        anthropic_version: "vertex-2023-10-16",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "Hi" }],
      },
    });
    expect(res.status).toBe(200);
    expect(res.data).toContain("event: message_start");
    expect(res.data).toContain('"text":" the mock."');
    expect(mock.anthropic.requests.at(-1)!.body).toMatchObject({ model: "claude-sonnet-4-5@20250929", stream: true });
  });

  it("refuses a Claude body that names its model or lacks the Vertex anthropic_version", async () => {
    const client = jwtOf(mock.serviceAccount);
    const call = (data: object) =>
      client.request({ url: modelUrl("anthropic", "claude-x", "rawPredict"), method: "POST", data }).then(
        (r) => r.status,
        (e: { status?: number }) => e.status,
      );
    const messages = [{ role: "user", content: "Hi" }];
    expect(await call({ anthropic_version: "vertex-2023-10-16", model: "claude-x", max_tokens: 8, messages })).toBe(
      400,
    );
    expect(await call({ anthropic_version: "2023-06-01", max_tokens: 8, messages })).toBe(400);
    expect(await call({ anthropic_version: "vertex-2023-10-16", max_tokens: 8, messages })).toBe(200);
  });

  it("answers :predict with one vector and its token count per instance", async () => {
    const client = jwtOf(mock.serviceAccount);
    const res = await client.request<{
      predictions: { embeddings: { values: number[]; statistics: { token_count: number } } }[];
    }>({
      url: modelUrl("google", "text-embedding-005", "predict"),
      method: "POST",
      data: { instances: [{ content: "one two three" }, { content: "four" }], parameters: { outputDimensionality: 4 } },
    });
    expect(res.data.predictions.map((p) => p.embeddings.statistics.token_count)).toEqual([3, 1]);
    expect(res.data.predictions.map((p) => p.embeddings.values.length)).toEqual([4, 4]);
  });

  it("refuses an assertion signed with another key, and a request without a token it issued", async () => {
    const before = mock.tokenRequests.length;
    const err = await jwtOf(mock.wrongKeyServiceAccount)
      .getAccessToken()
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(err?.message).toMatch(/invalid_grant|Invalid JWT Signature/);
    expect(mock.tokenRequests.slice(before)).toEqual([{ claims: {}, issued: null }]);
    const res = await fetch(modelUrl("google", "gemini-2.5-flash", "generateContent"), {
      method: "POST",
      headers: { authorization: "Bearer ya29.forged", "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe("UNAUTHENTICATED");
  });

  it("accepts application default credentials read from GOOGLE_APPLICATION_CREDENTIALS-style options", async () => {
    // GoogleAuth is what ADC goes through; given the key file's fields, it makes the same JWT client.
    const auth = new GoogleAuth({
      credentials: JSON.parse(mock.serviceAccount) as { client_email: string; private_key: string },
      scopes: ["https://www.googleapis.com/auth/cloud-platform"],
      clientOptions: { transporter: transporter() },
    });
    const token = await auth.getAccessToken();
    expect(token).toMatch(/^ya29\.mock-/);
    expect(mock.tokens.has(token!)).toBe(true);
  });
});
