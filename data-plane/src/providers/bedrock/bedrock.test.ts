// The Bedrock provider against the mock Bedrock runtime, which recomputes every SigV4 signature and holds
// bodies to Bedrock's rules (test/mocks/bedrock-upstream.ts, proven against AWS's client in
// mock-upstream.test.ts): prepared calls are accepted, streams are re-framed for the protocols' decoders,
// errors are put in the gateway's terms.

import { EventStreamCodec } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BedrockMock,
  DEFAULT_BEDROCK_CREDENTIALS,
  startBedrockUpstream,
} from "../../../../test/mocks/bedrock-upstream.ts";
import type { RouteSnapshot } from "../../contract/index.ts";
import {
  type CanonicalRequest,
  type CanonicalStreamEvent,
  protocols,
  upstreamAdapters,
} from "../../protocols/index.ts";
import type { UpstreamResponse } from "../../upstreams/transport.ts";
import { providers } from "../index.ts";
import { type ProtocolCall, type ProviderContext, ProviderAuthError } from "../types.ts";
import { parseBedrockError } from "./errors.ts";
import { MessageSplitter, sseOfMessage } from "./event-stream.ts";
import { isAnthropicModel } from "./models.ts";

const bedrock = providers.bedrock;
const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const NOVA = "us.amazon.nova-pro-v1:0";
const SESSION = { accessKeyId: "ASIAMOCKSESSION00002", secretAccessKey: "s3cr3t", sessionToken: "tok" };

let mock: BedrockMock;
beforeAll(async () => {
  mock = await startBedrockUpstream({ credentials: [DEFAULT_BEDROCK_CREDENTIALS, SESSION] });
});
afterAll(() => mock.close());

let n = 0;
function route(model: string, secrets: Record<string, string> = { ...DEFAULT_BEDROCK_CREDENTIALS }): RouteSnapshot {
  return {
    upstream: `bedrock-${++n}`,
    protocol: bedrock.protocolFor(model, null),
    provider: "bedrock",
    providerOptions: { region: "us-east-1" },
    baseUrl: mock.url,
    upstreamModel: model,
    // the test context reads the secrets from here (the gateway's seals them)
    secretsEnc: JSON.stringify(secrets),
  } as unknown as RouteSnapshot;
}

const ctx: ProviderContext = {
  apiKey: () => null,
  secrets: (r) => JSON.parse(r.secretsEnc ?? "{}") as Record<string, string>,
  logger: { warn: () => undefined, error: () => undefined },
};

async function send(r: RouteSnapshot, call: ProtocolCall): Promise<UpstreamResponse> {
  const prepared = await bedrock.prepare(r, call, ctx);
  const res = await fetch(prepared.url, {
    method: "POST",
    headers: prepared.headers,
    body: typeof prepared.body === "string" ? prepared.body : new Uint8Array(prepared.body),
  });
  const up: UpstreamResponse = {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: (async function* () {
      for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) yield Buffer.from(c);
    })(),
    text: () => res.text(),
  };
  return res.ok ? bedrock.answer!(r, call, up) : up;
}

async function decode(
  protocol: "anthropic" | "bedrock-converse",
  res: UpstreamResponse,
): Promise<CanonicalStreamEvent[]> {
  const dec = upstreamAdapters[protocol].createUpstreamStreamDecoder();
  const out: CanonicalStreamEvent[] = [];
  for await (const chunk of res.body) out.push(...dec.push(chunk));
  out.push(...dec.end());
  return out;
}

const canonical = (stream: boolean, extra: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  model: "m",
  system: ["Be brief."],
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  maxOutputTokens: 100,
  stream,
  protocol: "openai",
  ...extra,
});

describe("bedrock provider", () => {
  it("speaks Anthropic's Messages to Anthropic's models (inference profiles too) and Converse to every other", () => {
    for (const m of [
      CLAUDE,
      "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
      "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
      "us-gov.anthropic.claude-3-haiku-20240307-v1:0",
      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0",
    ])
      expect([m, bedrock.protocolFor(m, null)]).toEqual([m, "anthropic"]);
    for (const m of [
      NOVA,
      "amazon.nova-lite-v1:0",
      "meta.llama3-70b-instruct-v1:0",
      "mistral.mistral-large-2407-v1:0",
      "deepseek.r1-v1:0",
      "openai.gpt-oss-120b-1:0",
    ])
      expect([m, bedrock.protocolFor(m, null)]).toEqual([m, "bedrock-converse"]);
    expect(isAnthropicModel("amazon.titan-anthropic-like")).toBe(false);
    // an application inference profile names no model: the operator says which
    expect(bedrock.protocolFor("arn:aws:bedrock:us-east-1:1:application-inference-profile/abc", "anthropic")).toBe(
      "anthropic",
    );
    expect(() => bedrock.protocolFor(CLAUDE, "openai")).toThrow(/anthropic .* or bedrock-converse/);
    expect(bedrock.defaultBaseUrl({ region: "eu-west-3" })).toBe("https://bedrock-runtime.eu-west-3.amazonaws.com");
  });

  it("InvokeModel: an Anthropic client's body loses model and stream, gains anthropic_version and its betas, signed over the id's ':'", async () => {
    mock.reply({ text: ["Hello"] });
    const r = route(CLAUDE);
    const body = JSON.stringify({
      model: CLAUDE,
      max_tokens: 10,
      stream: false,
      messages: [{ role: "user", content: "Hi" }],
    });
    const res = await send(r, {
      path: "/messages?beta=true",
      body,
      headers: { "anthropic-beta": "a-2025, b-2025", "anthropic-version": "2023-06-01" },
      op: "generate",
      stream: false,
    });
    expect(res.status).toBe(200);
    const rec = mock.requests.at(-1)!;
    expect(rec.url).toBe("/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke");
    expect(rec.body).toEqual({
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
      anthropic_version: "bedrock-2023-05-31",
      anthropic_beta: ["a-2025", "b-2025"],
    });
    expect(rec.headers["anthropic-version"]).toBeUndefined();
    expect(protocols.anthropic.parseUpstreamResponse(JSON.parse(await res.text())).content).toEqual([
      { type: "text", text: "Hello" },
    ]);
  });

  it("InvokeModelWithResponseStream, with a session token: the event stream becomes Anthropic's SSE, without Bedrock's metrics", async () => {
    mock.reply({
      text: ["a", "b"],
      usage: { promptTokens: 100, completionTokens: 7, cachedTokens: 60, cacheWrite5mTokens: 30 },
    });
    const r = route(CLAUDE, SESSION);
    const up = protocols.anthropic.buildUpstreamRequest(canonical(true), CLAUDE, { stream: true });
    const res = await send(r, {
      path: up.path,
      body: JSON.stringify(up.body),
      headers: up.headers,
      op: "generate",
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(mock.requests.at(-1)!.url).toBe(
      "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream",
    );
    const events = await decode("anthropic", res);
    expect(
      events
        .filter((e) => e.type === "text")
        .map((e) => (e as { text: string }).text)
        .join(""),
    ).toBe("ab");
    expect(events.filter((e) => e.type === "usage").at(-1)).toEqual({
      type: "usage",
      usage: { promptTokens: 100, completionTokens: 7, reasoningTokens: 0, cachedTokens: 60, cacheWrite5mTokens: 30 },
    });
    expect(events.at(-1)).toEqual({ type: "end" });
  });

  it("Converse and ConverseStream: canonical requests accepted, answers and usage (cache reads and writes) read back", async () => {
    const usage = { promptTokens: 80, completionTokens: 9, cachedTokens: 50, cacheWrite1hTokens: 20 };
    const expected = {
      promptTokens: 80,
      completionTokens: 9,
      reasoningTokens: 0,
      cachedTokens: 50,
      cacheWrite1hTokens: 20,
    };
    mock.reply({ text: ["Hi"], toolCalls: [{ name: "get", arguments: { q: 1 } }], usage });
    const r = route(NOVA);
    expect(r.protocol).toBe("bedrock-converse");
    const req = canonical(false, {
      tools: [{ name: "get", parameters: { type: "object" } }],
      toolChoice: { type: "auto" },
      temperature: 0.2,
      stop: ["END"],
    });
    const built = upstreamAdapters["bedrock-converse"].buildUpstreamRequest(req, NOVA, { stream: false });
    const res = await send(r, {
      path: built.path,
      body: JSON.stringify(built.body),
      headers: built.headers,
      op: "generate",
      stream: false,
    });
    expect(res.status).toBe(200);
    expect(mock.requests.at(-1)!.body).toEqual({
      messages: [{ role: "user", content: [{ text: "Hi" }] }],
      system: [{ text: "Be brief." }],
      inferenceConfig: { maxTokens: 100, temperature: 0.2, stopSequences: ["END"] },
      toolConfig: {
        tools: [{ toolSpec: { name: "get", inputSchema: { json: { type: "object" } } } }],
        toolChoice: { auto: {} },
      },
    });
    const answer = upstreamAdapters["bedrock-converse"].parseUpstreamResponse(JSON.parse(await res.text()));
    expect(answer.content).toEqual([
      { type: "text", text: "Hi" },
      { type: "tool_call", id: "tooluse_mock00", name: "get", arguments: '{"q":1}' },
    ]);
    expect(answer.finishReason).toBe("tool_calls");
    expect(answer.usage).toEqual(expected);

    mock.reply({ thinking: ["think"], text: ["x", "y"], toolCalls: [{ name: "get", arguments: { q: 2 } }], usage });
    const streamed = upstreamAdapters["bedrock-converse"].buildUpstreamRequest(req, NOVA, { stream: true });
    const sres = await send(r, {
      path: streamed.path,
      body: JSON.stringify(streamed.body),
      headers: streamed.headers,
      op: "generate",
      stream: true,
    });
    expect(mock.requests.at(-1)!.url).toBe("/model/us.amazon.nova-pro-v1%3A0/converse-stream");
    const events = await decode("bedrock-converse", sres);
    expect(events.map((e) => e.type)).toEqual([
      "start",
      "thinking",
      "thinking_signature",
      "text",
      "text",
      "tool_call_start",
      "tool_call_delta",
      "tool_call_delta",
      "tool_call_delta",
      "finish",
      "usage",
      "end",
    ]);
    expect(events.find((e) => e.type === "finish")).toEqual({ type: "finish", reason: "tool_calls" });
    expect(events.find((e) => e.type === "usage")).toEqual({ type: "usage", usage: expected });
  });

  it("a mid-stream exception becomes each protocol's error event, with its kind", async () => {
    mock.reply({
      text: ["a", "b"],
      midStreamError: { message: "Too many tokens", type: "throttlingException", afterChunks: 1 },
    });
    const built = upstreamAdapters["bedrock-converse"].buildUpstreamRequest(canonical(true), NOVA, { stream: true });
    const events = await decode(
      "bedrock-converse",
      await send(route(NOVA), { path: built.path, body: JSON.stringify(built.body), op: "generate", stream: true }),
    );
    const err = events.at(-1) as Extract<CanonicalStreamEvent, { type: "error" }>;
    expect([err.type, err.error.kind, err.error.message]).toEqual(["error", "rate_limit", "Too many tokens"]);

    mock.reply({ text: ["a", "b"], midStreamError: { message: "model broke", afterChunks: 1 } });
    const up = protocols.anthropic.buildUpstreamRequest(canonical(true), CLAUDE, { stream: true });
    const aevents = await decode(
      "anthropic",
      await send(route(CLAUDE), { path: up.path, body: JSON.stringify(up.body), op: "generate", stream: true }),
    );
    const aerr = aevents.at(-1) as Extract<CanonicalStreamEvent, { type: "error" }>;
    expect([aerr.type, aerr.error.kind, aerr.error.message]).toEqual(["error", "upstream", "model broke"]);
  });

  it("re-frames messages split at every byte, each as soon as its last byte arrives", () => {
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const msg = (type: string, payload: unknown) =>
      Buffer.from(
        codec.encode({
          headers: {
            ":event-type": { type: "string", value: type },
            ":message-type": { type: "string", value: "event" },
          },
          body: fromUtf8(JSON.stringify(payload)),
        }),
      );
    const a = msg("messageStart", { role: "assistant" });
    const b = msg("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "é" } });
    const all = Buffer.concat([a, b]);
    const splitter = new MessageSplitter();
    const seen: { at: number; sse: string }[] = [];
    for (let i = 0; i < all.length; i++)
      for (const m of splitter.push(all.subarray(i, i + 1))) seen.push({ at: i + 1, sse: sseOfMessage(m, "converse") });
    expect(seen).toEqual([
      { at: a.length, sse: 'event: messageStart\ndata: {"role":"assistant"}\n\n' },
      { at: all.length, sse: 'event: contentBlockDelta\ndata: {"contentBlockIndex":0,"delta":{"text":"é"}}\n\n' },
    ]);
    expect(splitter.leftover).toBe(0);
    // a corrupt message (its CRC no longer matches) is refused, not read
    const bad = Buffer.from(a);
    bad.writeUInt8(bad.readUInt8(bad.length - 6) ^ 0xff, bad.length - 6);
    expect(() => new MessageSplitter().push(bad)).toThrow();
  });

  it("maps Bedrock's errors: throttling 429, validation 400 with its message, credentials an auth failure, unknown model", async () => {
    const h = (t: string) => ({ "x-amzn-errortype": `${t}:http://internal.amazon.com/coral/com.amazon.bedrock/` });
    const body = JSON.stringify({ message: "why" });
    expect(parseBedrockError(429, h("ThrottlingException"), body)).toMatchObject({ status: 429, kind: "rate_limit" });
    expect(parseBedrockError(400, h("ValidationException"), body)).toMatchObject({
      status: 400,
      kind: "invalid_request",
      message: "why",
    });
    for (const t of [
      "AccessDeniedException",
      "UnrecognizedClientException",
      "ExpiredTokenException",
      "InvalidSignatureException",
    ])
      expect(parseBedrockError(400, h(t), body)).toMatchObject({ status: 403 });
    expect(parseBedrockError(404, h("ResourceNotFoundException"), body)).toMatchObject({
      status: 404,
      code: "model_not_found",
    });
    expect(parseBedrockError(503, h("ServiceUnavailableException"), body)).toMatchObject({ status: 503 });
    expect(parseBedrockError(429, h("ModelNotReadyException"), body)).toMatchObject({ status: 429 });
    expect(parseBedrockError(500, {}, body)).toBeNull();

    // A wrong secret is refused by the (signature-checking) mock with the header the mapping reads.
    const res = await send(
      route(NOVA, { accessKeyId: DEFAULT_BEDROCK_CREDENTIALS.accessKeyId, secretAccessKey: "wrong" }),
      {
        path: "/x",
        body: JSON.stringify({ messages: [{ role: "user", content: [{ text: "Hi" }] }] }),
        op: "generate",
        stream: false,
      },
    );
    expect(res.status).toBe(403);
    expect(parseBedrockError(res.status, res.headers, await res.text())).toMatchObject({
      status: 403,
      kind: "permission",
    });
  });

  it("without keys, signs with the default AWS chain (here: the environment); half a key pair is an auth failure", async () => {
    const saved = {
      id: process.env.AWS_ACCESS_KEY_ID,
      secret: process.env.AWS_SECRET_ACCESS_KEY,
      token: process.env.AWS_SESSION_TOKEN,
    };
    process.env.AWS_ACCESS_KEY_ID = SESSION.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = SESSION.secretAccessKey;
    process.env.AWS_SESSION_TOKEN = SESSION.sessionToken;
    try {
      mock.reply({ text: ["chain"] });
      const res = await send(route(NOVA, {}), {
        path: "/x",
        body: JSON.stringify({ messages: [{ role: "user", content: [{ text: "Hi" }] }] }),
        op: "generate",
        stream: false,
      });
      expect(res.status).toBe(200);
      expect(mock.requests.at(-1)!.headers["x-amz-security-token"]).toBe("tok");
    } finally {
      for (const [k, v] of [
        ["AWS_ACCESS_KEY_ID", saved.id],
        ["AWS_SECRET_ACCESS_KEY", saved.secret],
        ["AWS_SESSION_TOKEN", saved.token],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
    await expect(
      bedrock.prepare(
        route(NOVA, { accessKeyId: "AKIA" }),
        { path: "/x", body: "{}", op: "generate", stream: false },
        ctx,
      ),
    ).rejects.toBeInstanceOf(ProviderAuthError);
  });
});
