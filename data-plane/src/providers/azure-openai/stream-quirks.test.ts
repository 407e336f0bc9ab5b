import { describe, expect, it } from "vitest";
import { openai } from "../../protocols/index.ts";

// Azure's streams are OpenAI's with content-filter annotations: an opening chunk of prompt_filter_results and
// no choices (empty id, model and created), and content_filter_results on every choice. The translating
// decoder must start the stream from the first real chunk and read a content_filter finish.

const SAFE = { filtered: false, severity: "safe" };
const frames = [
  {
    choices: [],
    created: 0,
    id: "",
    model: "",
    object: "",
    prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: SAFE } }],
  },
  {
    id: "chatcmpl-az1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-2024-11-20",
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, content_filter_results: {} }],
  },
  {
    id: "chatcmpl-az1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-2024-11-20",
    choices: [{ index: 0, delta: { content: "I can" }, finish_reason: null, content_filter_results: { hate: SAFE } }],
  },
  {
    id: "chatcmpl-az1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-2024-11-20",
    choices: [
      {
        index: 0,
        delta: {},
        finish_reason: "content_filter",
        content_filter_results: { violence: { filtered: true, severity: "high" } },
      },
    ],
  },
  {
    id: "chatcmpl-az1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-2024-11-20",
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
  },
];
const sse = frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join("") + "data: [DONE]\n\n";

describe("Azure OpenAI stream quirks", () => {
  it("starts from the first chunk with choices, and reads the content_filter finish and the usage", () => {
    const d = openai.createUpstreamStreamDecoder();
    const events = [...d.push(sse), ...d.end()];
    expect(events[0]).toEqual({
      type: "start",
      id: "chatcmpl-az1",
      model: "gpt-4o-2024-11-20",
      created: 1_700_000_000,
    });
    expect(events.filter((e) => e.type === "text")).toEqual([{ type: "text", text: "I can" }]);
    expect(events).toContainEqual({ type: "finish", reason: "content_filter" });
    expect(events).toContainEqual({
      type: "usage",
      usage: { promptTokens: 12, completionTokens: 3, reasoningTokens: 0, cachedTokens: 0 },
    });
    expect(events.at(-1)).toEqual({ type: "end" });
  });
});
