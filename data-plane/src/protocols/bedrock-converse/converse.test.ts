import { describe, expect, it } from "vitest";
import type { CanonicalRequest } from "../canonical.ts";
import { buildConverseRequest } from "./request.ts";
import { parseConverseResponse, usageOfConverse } from "./response.ts";
import { createConverseStreamDecoder } from "./stream.ts";

const req = (extra: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  model: "m",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  stream: false,
  protocol: "openai",
  ...extra,
});

describe("canonical → Converse", () => {
  it("writes a tool conversation in Converse's blocks: calls in assistant turns, results (and images) in user turns", () => {
    const out = buildConverseRequest(
      req({
        system: ["Be brief.", "Use tools."],
        messages: [
          {
            role: "user",
            content: [{ type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBOR" } }],
          },
          {
            role: "assistant",
            content: [
              { type: "thinking", text: "unsigned, stays behind" },
              { type: "text", text: "Calling." },
              { type: "tool_call", id: "call_1", name: "get", arguments: '{"q":1}' },
            ],
          },
          { role: "tool", toolCallId: "call_1", content: [{ type: "text", text: "42" }], isError: true },
          { role: "system", text: "Answer in French." },
        ],
        tools: [{ name: "get", description: "Gets", parameters: { type: "object" } }],
        toolChoice: { type: "tool", name: "get" },
      }),
      "us.amazon.nova-pro-v1:0",
      { stream: true },
    );
    expect(out.path).toBe("/model/us.amazon.nova-pro-v1%3A0/converse-stream");
    expect(out.body).toEqual({
      system: [{ text: "Be brief." }, { text: "Use tools." }],
      messages: [
        { role: "user", content: [{ image: { format: "png", source: { bytes: "iVBOR" } } }] },
        {
          role: "assistant",
          content: [{ text: "Calling." }, { toolUse: { toolUseId: "call_1", name: "get", input: { q: 1 } } }],
        },
        {
          role: "user",
          content: [
            { toolResult: { toolUseId: "call_1", content: [{ text: "42" }], status: "error" } },
            { text: "<system>\nAnswer in French.\n</system>" },
          ],
        },
      ],
      toolConfig: {
        tools: [{ toolSpec: { name: "get", description: "Gets", inputSchema: { json: { type: "object" } } } }],
        toolChoice: { tool: { name: "get" } },
      },
    });
  });

  it("drops and names what Converse has no field for; refuses n > 1, and an image it would have to fetch", () => {
    const out = buildConverseRequest(
      req({ seed: 7, presencePenalty: 1, user: "u1", parallelToolCalls: false, tools: [{ name: "t" }] }),
      "meta.llama3-70b-instruct-v1:0",
      { stream: false },
    );
    expect(out.dropped).toEqual(["presence_penalty", "seed", "user", "parallel_tool_calls"]);
    expect(() => buildConverseRequest(req({ n: 2 }), "meta.llama3", { stream: false })).toThrow(/'n'/);
    expect(() =>
      buildConverseRequest(
        req({
          messages: [{ role: "user", content: [{ type: "image", source: { kind: "url", url: "https://x/y.png" } }] }],
        }),
        "meta.llama3",
        { stream: false },
      ),
    ).toThrow(/Bedrock Converse.*inline/);
    // strict: the drop is a refusal naming Converse
    expect(() => buildConverseRequest(req({ seed: 7 }), "meta.llama3", { stream: false, strict: true })).toThrow(
      /'seed' is not supported by this model's Bedrock Converse upstream/,
    );
  });

  it("reasoning in the model family's own field, or dropped and named; a JSON schema as outputConfig", () => {
    const nova = buildConverseRequest(
      req({ reasoning: { enabled: true, effort: "high" } }),
      "us.amazon.nova-2-lite-v1:0",
      { stream: false },
    );
    expect(nova.body.additionalModelRequestFields).toEqual({
      reasoningConfig: { type: "enabled", maxReasoningEffort: "high" },
    });
    const oss = buildConverseRequest(req({ reasoning: { enabled: true, effort: "low" } }), "openai.gpt-oss-120b-1:0", {
      stream: false,
    });
    expect(oss.body.additionalModelRequestFields).toEqual({ reasoning_effort: "low" });
    const llama = buildConverseRequest(req({ reasoning: { enabled: true, effort: "low" } }), "meta.llama3", {
      stream: false,
    });
    expect([llama.body.additionalModelRequestFields, llama.dropped]).toEqual([undefined, ["reasoning_effort"]]);
    const json = buildConverseRequest(
      req({
        responseFormat: {
          type: "json_schema",
          name: "city",
          schema: { type: "object", properties: { c: { type: "string" } } },
        },
      }),
      "meta.llama3",
      { stream: false },
    );
    expect(json.body.outputConfig).toEqual({
      textFormat: {
        type: "json_schema",
        structure: { jsonSchema: { name: "city", schema: '{"type":"object","properties":{"c":{"type":"string"}}}' } },
      },
    });
  });

  it("offers no tools for tool_choice none unless the conversation already used them", () => {
    const tools = [{ name: "t", parameters: { type: "object" } }];
    expect(
      buildConverseRequest(req({ tools, toolChoice: { type: "none" } }), "m", { stream: false }).body.toolConfig,
    ).toBeUndefined();
    const withHistory = buildConverseRequest(
      req({
        tools,
        toolChoice: { type: "none" },
        messages: [
          { role: "user", content: [{ type: "text", text: "Hi" }] },
          { role: "assistant", content: [{ type: "tool_call", id: "c", name: "t", arguments: "{}" }] },
          { role: "tool", toolCallId: "c", content: [{ type: "text", text: "ok" }] },
        ],
      }),
      "m",
      { stream: false },
    );
    expect(withHistory.body.toolConfig).toEqual({
      tools: [{ toolSpec: { name: "t", inputSchema: { json: { type: "object" } } } }],
    });
    expect(withHistory.dropped).toEqual(["tool_choice: none"]);
  });
});

describe("Converse → canonical", () => {
  it("reads content, stop reason and usage: cache reads and writes (split by lifetime) are part of the prompt", () => {
    const res = parseConverseResponse({
      output: {
        message: {
          role: "assistant",
          content: [
            { reasoningContent: { reasoningText: { text: "hm", signature: "sig" } } },
            { reasoningContent: { redactedContent: "AAAA" } },
            { text: "Hi" },
          ],
        },
      },
      stopReason: "guardrail_intervened",
      usage: {
        inputTokens: 10,
        outputTokens: 5,
        totalTokens: 95,
        cacheReadInputTokens: 30,
        cacheWriteInputTokens: 50,
        cacheDetails: [
          { ttl: "1h", inputTokens: 20 },
          { ttl: "5m", inputTokens: 30 },
        ],
      },
    });
    expect(res.content).toEqual([
      { type: "thinking", text: "hm", signature: "sig" },
      { type: "text", text: "Hi" },
    ]);
    expect(res.finishReason).toBe("content_filter");
    expect(res.usage).toEqual({
      promptTokens: 90,
      completionTokens: 5,
      reasoningTokens: 0,
      cachedTokens: 30,
      cacheWrite5mTokens: 30,
      cacheWrite1hTokens: 20,
    });
    // a write total without its split is 5-minute writes; a malformed count makes the report unusable (NaN)
    expect(usageOfConverse({ inputTokens: 1, outputTokens: 1, cacheWriteInputTokens: 4 })).toMatchObject({
      promptTokens: 5,
      cacheWrite5mTokens: 4,
    });
    expect(usageOfConverse({ inputTokens: -1, outputTokens: 1 }).promptTokens).toBeNaN();
  });

  it("a stream cut before messageStop is truncated; one that stops after it without metadata has ended", () => {
    const cut = createConverseStreamDecoder();
    cut.push(
      'event: messageStart\ndata: {"role":"assistant"}\n\nevent: contentBlockDelta\ndata: {"contentBlockIndex":0,"delta":{"text":"a"}}\n\n',
    );
    expect(cut.end().at(-1)).toMatchObject({ type: "error", error: { code: "stream_truncated" } });
    const ended = createConverseStreamDecoder();
    ended.push(
      'event: messageStart\ndata: {"role":"assistant"}\n\nevent: messageStop\ndata: {"stopReason":"max_tokens"}\n\n',
    );
    expect(ended.end()).toEqual([{ type: "end" }]);
  });
});
