// The mock Bedrock runtime (test/mocks/bedrock-upstream.ts) against AWS's own client: what the SDK sends it
// accepts (SigV4 over a model id with ':' included), what it answers the SDK reads (JSON and event streams),
// and what AWS refuses it refuses the same way. The gateway's tests rely on it holding them to AWS's rules.

import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from "@aws-sdk/client-bedrock-runtime";
import { Hash } from "@smithy/hash-node";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { SignatureV4 } from "@smithy/signature-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BedrockMock,
  DEFAULT_BEDROCK_CREDENTIALS,
  startBedrockUpstream,
} from "../../../../test/mocks/bedrock-upstream.ts";

// a JSON object read back from an answer
type Json = Record<string, unknown>;

const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const NOVA = "us.amazon.nova-pro-v1:0";
const SESSION = {
  accessKeyId: "ASIAMOCKSESSION00001",
  secretAccessKey: "session/secret",
  sessionToken: "mock-session-token",
};

let mock: BedrockMock;
let client: BedrockRuntimeClient;
beforeAll(async () => {
  mock = await startBedrockUpstream({ credentials: [DEFAULT_BEDROCK_CREDENTIALS, SESSION] });
  client = sdk(DEFAULT_BEDROCK_CREDENTIALS);
});
afterAll(async () => {
  client.destroy();
  await mock.close();
});

/** AWS's client over HTTP/1.1 (its default for Bedrock is HTTP/2, which the mock's node:http does not speak). */
const sdk = (
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  extra: { maxAttempts?: number } = {},
) =>
  new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: mock.url,
    credentials,
    requestHandler: new NodeHttpHandler(),
    ...extra,
  });

const messagesBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    anthropic_version: "bedrock-2023-05-31",
    max_tokens: 100,
    messages: [{ role: "user", content: "Hi" }],
    ...extra,
  });

describe("the mock Bedrock runtime, driven by @aws-sdk/client-bedrock-runtime", () => {
  it("InvokeModel: a Claude model id with ':' is signed by the SDK, accepted, and answered in Anthropic's shape", async () => {
    mock.reply({
      text: ["Hello", " there"],
      usage: { promptTokens: 30, completionTokens: 4, cachedTokens: 20, cacheWrite5mTokens: 6 },
    });
    const out = await client.send(
      new InvokeModelCommand({
        modelId: CLAUDE,
        body: messagesBody(),
        contentType: "application/json",
        accept: "application/json",
      }),
    );
    const answer = JSON.parse(new TextDecoder().decode(out.body)) as Json;
    expect(answer.content).toEqual([{ type: "text", text: "Hello there" }]);
    expect(answer.usage).toEqual({
      input_tokens: 4,
      cache_creation_input_tokens: 6,
      cache_read_input_tokens: 20,
      output_tokens: 4,
    });
    // The path carries the id encoded once; the SDK signed it encoded twice and the mock agreed.
    expect(mock.requests.at(-1)!.url).toBe("/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke");
  });

  it("InvokeModel refuses `model` and `stream` in the body, as Bedrock does", async () => {
    const err = await client
      .send(
        new InvokeModelCommand({
          modelId: CLAUDE,
          body: messagesBody({ model: "claude" }),
          contentType: "application/json",
        }),
      )
      .catch((e: unknown) => e as { name: string; message: string; $metadata: { httpStatusCode: number } });
    expect(err).toMatchObject({ name: "ValidationException", $metadata: { httpStatusCode: 400 } });
    expect((err as { message: string }).message).toContain("extraneous key [model]");
  });

  it("InvokeModelWithResponseStream: the SDK decodes every chunk of the split event stream", async () => {
    mock.reply({ text: ["a", "b", "c"], toolCalls: [{ name: "get", arguments: { q: 1 } }] });
    const out = await client.send(
      new InvokeModelWithResponseStreamCommand({
        modelId: CLAUDE,
        body: messagesBody(),
        contentType: "application/json",
      }),
    );
    const events: Json[] = [];
    for await (const part of out.body!) {
      if (part.chunk?.bytes) events.push(JSON.parse(new TextDecoder().decode(part.chunk.bytes)) as Json);
    }
    expect(events.map((e) => e.type)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events.at(-1)!["amazon-bedrock-invocationMetrics"]).toMatchObject({
      inputTokenCount: 10,
      outputTokenCount: 5,
    });
  });

  it("Converse: a model id with ':' and Converse's request shape, answered with usage", async () => {
    mock.reply({
      text: ["Hi!"],
      usage: { promptTokens: 50, completionTokens: 3, cachedTokens: 40, cacheWrite1hTokens: 5 },
    });
    const out = await client.send(
      new ConverseCommand({
        modelId: NOVA,
        system: [{ text: "Be brief." }],
        messages: [{ role: "user", content: [{ text: "Hi" }] }],
        inferenceConfig: { maxTokens: 50, temperature: 0.5 },
        toolConfig: {
          tools: [{ toolSpec: { name: "get", inputSchema: { json: { type: "object" } } } }],
          toolChoice: { auto: {} },
        },
      }),
    );
    expect(out.output?.message?.content).toEqual([{ text: "Hi!" }]);
    expect(out.stopReason).toBe("end_turn");
    expect(out.usage).toMatchObject({
      inputTokens: 5,
      outputTokens: 3,
      cacheReadInputTokens: 40,
      cacheWriteInputTokens: 5,
    });
    expect(out.usage?.cacheDetails).toEqual([{ ttl: "1h", inputTokens: 5 }]);
    expect(mock.requests.at(-1)!.url).toBe("/model/us.amazon.nova-pro-v1%3A0/converse");
  });

  it("ConverseStream: the SDK reads every event, tool use and metadata included; a session token is required and checked", async () => {
    const withSession = sdk(SESSION);
    mock.reply({ thinking: ["hm"], text: ["x", "y"], toolCalls: [{ name: "get", arguments: { a: "b" } }] });
    const out = await withSession.send(
      new ConverseStreamCommand({ modelId: NOVA, messages: [{ role: "user", content: [{ text: "Hi" }] }] }),
    );
    const kinds: string[] = [];
    let text = "";
    let args = "";
    let usage: unknown;
    for await (const ev of out.stream!) {
      kinds.push(Object.keys(ev).filter((k) => (ev as unknown as Record<string, unknown>)[k] !== undefined)[0]!);
      text += ev.contentBlockDelta?.delta?.text ?? "";
      args += ev.contentBlockDelta?.delta?.toolUse?.input ?? "";
      if (ev.metadata) usage = ev.metadata.usage;
    }
    expect(kinds[0]).toBe("messageStart");
    expect(kinds.slice(-2)).toEqual(["messageStop", "metadata"]);
    expect(text).toBe("xy");
    expect(JSON.parse(args)).toEqual({ a: "b" });
    expect(usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    expect(mock.requests.at(-1)!.headers["x-amz-security-token"]).toBe("mock-session-token");

    const noToken = sdk({ accessKeyId: SESSION.accessKeyId, secretAccessKey: SESSION.secretAccessKey });
    await expect(
      noToken.send(new ConverseCommand({ modelId: NOVA, messages: [{ role: "user", content: [{ text: "Hi" }] }] })),
    ).rejects.toMatchObject({ name: "UnrecognizedClientException", $metadata: { httpStatusCode: 403 } });
    withSession.destroy();
    noToken.destroy();
  });

  it("ConverseStream: a mid-stream exception reaches the SDK as its typed error", async () => {
    mock.reply({
      text: ["a", "b", "c"],
      midStreamError: { message: "slow down", type: "throttlingException", afterChunks: 1 },
    });
    const out = await client.send(
      new ConverseStreamCommand({ modelId: NOVA, messages: [{ role: "user", content: [{ text: "Hi" }] }] }),
    );
    const read = async () => {
      for await (const ev of out.stream!) void ev;
    };
    await expect(read()).rejects.toMatchObject({ name: "ThrottlingException", message: "slow down" });
  });

  it("refuses a wrong secret, and a signature over the path encoded only once (the classic ':' mistake), with 403", async () => {
    const wrong = sdk({ accessKeyId: DEFAULT_BEDROCK_CREDENTIALS.accessKeyId, secretAccessKey: "not-the-secret" });
    await expect(
      wrong.send(new ConverseCommand({ modelId: NOVA, messages: [{ role: "user", content: [{ text: "Hi" }] }] })),
    ).rejects.toMatchObject({ name: "InvalidSignatureException", $metadata: { httpStatusCode: 403 } });
    wrong.destroy();

    // Signed without the second encoding (uriEscapePath false) but sent encoded once: AWS computes another signature.
    const url = new URL(`${mock.url}/model/${encodeURIComponent(NOVA)}/converse`);
    const body = JSON.stringify({ messages: [{ role: "user", content: [{ text: "Hi" }] }] });
    const sign = (uriEscapePath: boolean) =>
      new SignatureV4({
        service: "bedrock",
        region: "us-east-1",
        credentials: DEFAULT_BEDROCK_CREDENTIALS,
        sha256: Hash.bind(null, "sha256"),
        uriEscapePath,
      }).sign({
        method: "POST",
        protocol: "http:",
        hostname: url.hostname,
        port: Number(url.port),
        path: url.pathname,
        query: {},
        headers: { host: url.host, "content-type": "application/json" },
        body,
      });
    const send = async (uriEscapePath: boolean) => {
      const { headers } = await sign(uriEscapePath);
      delete headers.host;
      return fetch(url, { method: "POST", headers, body });
    };
    const once = await send(false);
    expect(once.status).toBe(403);
    expect(once.headers.get("x-amzn-errortype")).toMatch(/^InvalidSignatureException/);
    expect(((await once.json()) as { message: string }).message).toContain("signature we calculated does not match");
    expect((await send(true)).status).toBe(200);
  });

  it("answers errors as AWS does: x-amzn-ErrorType and a message, read by the SDK as typed exceptions", async () => {
    mock.reply({ error: { status: 429, message: "Too many requests, please wait before trying again." } });
    const throttled = sdk(DEFAULT_BEDROCK_CREDENTIALS, { maxAttempts: 1 });
    await expect(
      throttled.send(new ConverseCommand({ modelId: NOVA, messages: [{ role: "user", content: [{ text: "Hi" }] }] })),
    ).rejects.toMatchObject({ name: "ThrottlingException", $metadata: { httpStatusCode: 429 } });
    throttled.destroy();
  });
});
