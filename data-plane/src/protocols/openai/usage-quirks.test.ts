import { describe, expect, it } from "vitest";
import { createOpenAIStreamDecoder } from "./stream.ts";
import { openAIPassthrough } from "./passthrough.ts";
import { parseOpenAIResponse } from "./response.ts";

// What OpenAI-compatible vendors add to OpenAI's answers, from their documented examples: DeepSeek's cache
// hit/miss counts and reasoning_content, OpenRouter's reasoning, Moonshot's top-level cached_tokens, Groq's
// x_groq.usage. Each is read into the canonical usage (so every client protocol and the bill see it).

const deepseekAnswer = {
  id: "930c60df-bf64-41c9-a88e-3ec75f81e00e",
  object: "chat.completion",
  created: 1705651092,
  model: "deepseek-reasoner",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: "Hello!", reasoning_content: "The user greets me." },
      logprobs: null,
      finish_reason: "stop",
    },
  ],
  usage: {
    prompt_tokens: 1200,
    completion_tokens: 40,
    total_tokens: 1240,
    prompt_cache_hit_tokens: 1024,
    prompt_cache_miss_tokens: 176,
    completion_tokens_details: { reasoning_tokens: 12 },
  },
};

describe("OpenAI-compatible vendors' usage and reasoning", () => {
  it("DeepSeek: cache hits are cached input, reasoning_content is reasoning", () => {
    const res = parseOpenAIResponse(deepseekAnswer);
    expect(res.usage).toEqual({ promptTokens: 1200, completionTokens: 40, reasoningTokens: 12, cachedTokens: 1024 });
    expect(res.content).toContainEqual(expect.objectContaining({ type: "thinking", text: "The user greets me." }));
  });
  it("Moonshot: a top-level cached_tokens is cached input", () => {
    const res = parseOpenAIResponse({
      ...deepseekAnswer,
      usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, cached_tokens: 64 },
    });
    expect(res.usage.cachedTokens).toBe(64);
  });
  it("OpenAI's own prompt_tokens_details wins where both are given", () => {
    const res = parseOpenAIResponse({
      ...deepseekAnswer,
      usage: {
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 10 },
        cached_tokens: 64,
      },
    });
    expect(res.usage.cachedTokens).toBe(10);
  });
  it("a DeepSeek stream: reasoning_content deltas, then the usage with its cache hits", () => {
    const d = createOpenAIStreamDecoder();
    const frames = [
      { choices: [{ index: 0, delta: { role: "assistant", reasoning_content: "Think" }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      { choices: [], usage: deepseekAnswer.usage },
    ]
      .map(
        (f) =>
          `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", model: "deepseek-reasoner", ...f })}\n\n`,
      )
      .join("");
    const events = [...d.push(frames + "data: [DONE]\n\n"), ...d.end()];
    expect(events).toContainEqual({ type: "thinking", text: "Think" });
    expect(events).toContainEqual({
      type: "usage",
      usage: { promptTokens: 1200, completionTokens: 40, reasoningTokens: 12, cachedTokens: 1024 },
    });
  });
  it("Groq: the usage in x_groq of the last chunk, read on the translated and the passthrough path", () => {
    const usage = { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 };
    const last = `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", model: "llama", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], x_groq: { id: "req_1", usage } })}\n\n`;
    const d = createOpenAIStreamDecoder();
    expect([...d.push(last), ...d.end()]).toContainEqual({
      type: "usage",
      usage: { promptTokens: 30, completionTokens: 7, reasoningTokens: 0, cachedTokens: 0 },
    });
    const pt = openAIPassthrough.createStream("llama", "req", {
      model: "llama",
      stream: true,
      streamIncludeUsage: true,
    });
    pt.push(Buffer.from(last + "data: [DONE]\n\n"));
    pt.end();
    expect(pt.usage).toEqual({ promptTokens: 30, completionTokens: 7, reasoningTokens: 0, cachedTokens: 0 });
  });
});
