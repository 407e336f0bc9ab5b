import type { MessageCreateParams } from "@anthropic-ai/sdk/resources/messages/messages";
import { describe, expect, it } from "vitest";
import { protocols } from "../index.ts";

// What reaches an Anthropic upstream is a request the Anthropic API accepts (issue 26): each literal below is
// typed against the official SDK's MessageCreateParams (tsc fails on a field or shape the API does not take),
// and the builder's output must equal it (the test fails when the builder sends anything else).

const typed = (b: MessageCreateParams): Record<string, unknown> => b as unknown as Record<string, unknown>;

describe("Anthropic upstream requests match the SDK's types", () => {
  it("json_object from an OpenAI client: a forced tool whose input is the object", () => {
    const req = protocols.openai.parseClientRequest({
      model: "m",
      messages: [
        { role: "system", content: "Answer in JSON." },
        { role: "user", content: "A city?" },
      ],
      response_format: { type: "json_object" },
    });
    const expected = typed({
      model: "claude-x",
      max_tokens: 4096,
      messages: [{ role: "user", content: [{ type: "text", text: "A city?" }] }],
      system: "Answer in JSON.",
      tools: [
        {
          name: "modelgate_json_answer",
          description: "Give your answer as a JSON object: call this tool with that object as its input.",
          input_schema: { type: "object" },
        },
      ],
      tool_choice: { type: "tool", name: "modelgate_json_answer" },
    });
    expect(protocols.anthropic.buildUpstreamRequest(req, "claude-x", { stream: false }).body).toEqual(expected);
  });

  it("json_object with the client's own tools: any tool, the JSON one or theirs", () => {
    const req = protocols.openai.parseClientRequest({
      model: "m",
      messages: [{ role: "user", content: "Weather?" }],
      tools: [{ type: "function", function: { name: "weather", parameters: { type: "object", properties: {} } } }],
      response_format: { type: "json_object" },
    });
    const expected = typed({
      model: "claude-x",
      max_tokens: 4096,
      messages: [{ role: "user", content: [{ type: "text", text: "Weather?" }] }],
      tools: [
        { name: "weather", input_schema: { type: "object", properties: {} } },
        {
          name: "modelgate_json_answer",
          description: "Give your answer as a JSON object: call this tool with that object as its input.",
          input_schema: { type: "object" },
        },
      ],
      tool_choice: { type: "any" },
    });
    expect(protocols.anthropic.buildUpstreamRequest(req, "claude-x", { stream: false }).body).toEqual(expected);
  });

  it("a Responses client's mid-conversation system message, web_search and namespace tools", () => {
    const req = protocols["openai-responses"].parseClientRequest({
      model: "m",
      input: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
        { role: "developer", content: "Be brief." },
        { role: "user", content: "search" },
      ],
      tools: [
        { type: "web_search" },
        { type: "namespace", name: "crm", description: "CRM", tools: [{ type: "function", name: "find" }] },
      ],
      reasoning: { effort: "low" },
    });
    const expected = typed({
      model: "claude-x",
      max_tokens: 1024 + 4096,
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "text", text: "hello" }] },
        {
          role: "user",
          content: [
            { type: "text", text: "<system>\nBe brief.\n</system>" },
            { type: "text", text: "search" },
          ],
        },
      ],
      tools: [
        { name: "crm__find", input_schema: { type: "object", properties: {} } },
        { type: "web_search_20250305", name: "web_search" },
      ],
      thinking: { type: "enabled", budget_tokens: 1024 },
    });
    expect(protocols.anthropic.buildUpstreamRequest(req, "claude-x", { stream: false }).body).toEqual(expected);
  });
});
