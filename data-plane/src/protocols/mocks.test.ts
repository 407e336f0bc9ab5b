// The mock upstreams against the official SDKs (proof that their wire format is the vendors') and against
// this layer's builders and decoders (proof that the translators talk to them).

import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "../../../test/mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../../../test/mocks/gemini-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../../../test/mocks/script.ts";
import { type CanonicalRequest, type CanonicalStreamEvent, type ProtocolName, protocols } from "./index.ts";

let anthropicMock: MockUpstream;
let geminiMock: MockUpstream;
beforeAll(async () => {
  [anthropicMock, geminiMock] = await Promise.all([startAnthropicUpstream(), startGeminiUpstream()]);
});
afterAll(async () => {
  await Promise.all([anthropicMock.close(), geminiMock.close()]);
});

const req = (stream: boolean): CanonicalRequest => ({
  model: "m",
  system: ["Be brief."],
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  stream,
});

async function call(p: ProtocolName, mock: MockUpstream, stream: boolean, key = DEFAULT_MOCK_KEY) {
  const up = protocols[p].buildUpstreamRequest(req(stream), p === "gemini" ? "gemini-2.5-flash" : "claude-x", {
    stream,
  });
  return fetch(mock.url + up.path, {
    method: "POST",
    headers: { ...up.headers, ...protocols[p].authHeaders(key) },
    body: JSON.stringify(up.body),
  });
}

async function streamEvents(p: ProtocolName, res: Response): Promise<CanonicalStreamEvent[]> {
  const dec = protocols[p].createUpstreamStreamDecoder();
  const out: CanonicalStreamEvent[] = [];
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) out.push(...dec.push(chunk));
  out.push(...dec.end());
  return out;
}

describe("Anthropic mock", () => {
  it("answers the official SDK, streaming and not", async () => {
    anthropicMock.reply(
      { text: ["Hel", "lo"], usage: { promptTokens: 20, completionTokens: 2, cachedTokens: 5 } },
      { thinking: ["Hmm"], text: ["Yes"] },
    );
    const client = new Anthropic({
      apiKey: DEFAULT_MOCK_KEY,
      baseURL: anthropicMock.url.replace(/\/v1$/, ""),
      maxRetries: 0,
    });
    const msg = await client.messages.create({
      model: "claude-x",
      max_tokens: 100,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(msg.content).toEqual([{ type: "text", text: "Hello" }]);
    expect(msg.usage).toMatchObject({ input_tokens: 15, cache_read_input_tokens: 5, output_tokens: 2 });
    const final = await client.messages
      .stream({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] })
      .finalMessage();
    expect(final.content).toEqual([
      { type: "thinking", thinking: "Hmm", signature: "mock-signature" },
      { type: "text", text: "Yes" },
    ]);
    expect(final.stop_reason).toBe("end_turn");
  });

  it("streams a tool call that decodes to canonical events", async () => {
    anthropicMock.reply({ toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] });
    const events = await streamEvents("anthropic", await call("anthropic", anthropicMock, true));
    const args = events.flatMap((e) => (e.type === "tool_call_delta" ? [e.arguments] : [])).join("");
    expect(events.find((e) => e.type === "tool_call_start")).toEqual({
      type: "tool_call_start",
      index: 0,
      id: "toolu_mock00",
      name: "get_weather",
    });
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
    expect(events.slice(-3).map((e) => e.type)).toEqual(["finish", "usage", "end"]);
    expect(anthropicMock.requests.at(-1)?.headers["anthropic-version"]).toBe("2023-06-01");
  });

  it("stops by max tokens, fails mid-stream, and answers vendor errors", async () => {
    anthropicMock.reply({ text: ["a"], finish: "length" });
    const parsed = protocols.anthropic.parseUpstreamResponse(
      await (await call("anthropic", anthropicMock, false)).json(),
    );
    expect(parsed.finishReason).toBe("length");

    anthropicMock.reply({ text: ["a", "b"], midStreamError: { message: "Overloaded", afterChunks: 1 } });
    const events = await streamEvents("anthropic", await call("anthropic", anthropicMock, true));
    expect(events.at(-1)).toMatchObject({
      type: "error",
      error: { kind: "unavailable", code: "overloaded_error", message: "Overloaded" },
    });

    anthropicMock.reply({
      error: { status: 429, message: "Number of request tokens has exceeded your per-minute rate limit" },
    });
    const res = await call("anthropic", anthropicMock, false);
    expect(res.status).toBe(429);
    expect(protocols.anthropic.parseUpstreamError(res.status, await res.text())).toMatchObject({
      kind: "rate_limit",
      code: "rate_limit_error",
    });

    const unauth = await call("anthropic", anthropicMock, false, "wrong");
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toMatchObject({
      type: "error",
      error: { type: "authentication_error", message: "invalid x-api-key" },
    });
  });
});

describe("Gemini mock", () => {
  it("answers the official SDK, streaming and not", async () => {
    geminiMock.reply(
      { text: ["Hel", "lo"], usage: { promptTokens: 8, completionTokens: 2, reasoningTokens: 4 } },
      { text: ["A", "B", "C"] },
    );
    const ai = new GoogleGenAI({
      apiKey: DEFAULT_MOCK_KEY,
      httpOptions: { baseUrl: geminiMock.url.replace(/\/v1beta$/, ""), apiVersion: "v1beta" },
    });
    const res = await ai.models.generateContent({ model: "gemini-2.5-flash", contents: "Hi" });
    expect(res.text).toBe("Hello");
    expect(res.usageMetadata).toMatchObject({
      promptTokenCount: 8,
      candidatesTokenCount: 2,
      thoughtsTokenCount: 4,
      totalTokenCount: 14,
    });
    let text = "";
    for await (const c of await ai.models.generateContentStream({ model: "gemini-2.5-flash", contents: "Hi" }))
      text += c.text ?? "";
    expect(text).toBe("ABC");
    expect(geminiMock.requests.at(-1)?.url).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  });

  it("streams tool calls and thinking that decode to canonical events", async () => {
    geminiMock.reply({
      thinking: ["Think"],
      toolCalls: [{ name: "get_weather", arguments: { city: "Rome" } }],
      usage: { promptTokens: 5, completionTokens: 7, reasoningTokens: 3 },
    });
    const events = await streamEvents("gemini", await call("gemini", geminiMock, true));
    expect(events.filter((e) => e.type !== "usage" && e.type !== "start")).toEqual([
      { type: "thinking", text: "Think" },
      {
        type: "tool_call_start",
        index: 0,
        id: "call_get_weather_0",
        name: "get_weather",
        signature: "bW9jay1zaWduYXR1cmU=",
      },
      { type: "tool_call_delta", index: 0, arguments: '{"city":"Rome"}' },
      { type: "finish", reason: "tool_calls" },
      { type: "end" },
    ]);
    expect(events.filter((e) => e.type === "usage").at(-1)).toEqual({
      type: "usage",
      usage: { promptTokens: 5, completionTokens: 10, reasoningTokens: 3, cachedTokens: 0 },
    });
  });

  it("streams a JSON array without alt=sse", async () => {
    geminiMock.reply({ text: ["x", "y"] });
    const res = await fetch(`${geminiMock.url}/models/g:streamGenerateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": DEFAULT_MOCK_KEY, "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ parts: [{ text: "Hi" }] }] }),
    });
    const arr = (await res.json()) as {
      candidates: { content: { parts: { text: string }[] }; finishReason?: string }[];
    }[];
    expect(arr.map((c) => c.candidates[0]?.content.parts[0]?.text)).toEqual(["x", "y", ""]);
    expect(arr.at(-1)?.candidates[0]?.finishReason).toBe("STOP");
  });

  it("stops by max tokens, fails mid-stream, and answers vendor errors", async () => {
    geminiMock.reply({ text: ["a"], finish: "length" });
    const parsed = protocols.gemini.parseUpstreamResponse(await (await call("gemini", geminiMock, false)).json());
    expect(parsed.finishReason).toBe("length");

    geminiMock.reply({ text: ["a", "b"], midStreamError: { message: "The model is overloaded.", afterChunks: 1 } });
    const events = await streamEvents("gemini", await call("gemini", geminiMock, true));
    expect(events.at(-1)).toMatchObject({ type: "error", error: { kind: "unavailable", code: "UNAVAILABLE" } });

    geminiMock.reply({ error: { status: 429, message: "Resource has been exhausted" } });
    const res = await call("gemini", geminiMock, false);
    expect(protocols.gemini.parseUpstreamError(res.status, await res.text())).toEqual({
      kind: "rate_limit",
      code: "RESOURCE_EXHAUSTED",
      message: "Resource has been exhausted",
      param: null,
    });

    const unauth = await call("gemini", geminiMock, false, "wrong");
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toMatchObject({ error: { code: 401, status: "UNAUTHENTICATED" } });
  });
});
