import { describe, expect, it } from "vitest";
import { affinityOf } from "./affinity.ts";

const system = "You are a helpful assistant. ".repeat(200);

describe("affinityOf", () => {
  it("is the same on every turn of one OpenAI conversation and differs between conversations", () => {
    const turn1 = {
      model: "m",
      messages: [
        { role: "system", content: system },
        { role: "user", content: "plan a trip" },
      ],
    };
    const turn2 = {
      model: "m",
      messages: [...turn1.messages, { role: "assistant", content: "where to?" }, { role: "user", content: "Rome" }],
    };
    const other = {
      model: "m",
      messages: [
        { role: "system", content: system },
        { role: "user", content: "fix my code" },
      ],
    };
    expect(affinityOf(turn1)).not.toBeNull();
    expect(affinityOf(turn2)).toBe(affinityOf(turn1));
    expect(affinityOf(other)).not.toBe(affinityOf(turn1));
  });

  it("reads Anthropic's system and content blocks, Gemini's systemInstruction and parts, Responses' instructions", () => {
    const a1 = {
      system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    };
    const a2 = {
      ...a1,
      messages: [...a1.messages, { role: "assistant", content: "hello" }, { role: "user", content: "more" }],
    };
    const a3 = { ...a1, messages: [{ role: "user", content: [{ type: "text", text: "bye" }] }] };
    expect(affinityOf(a2)).toBe(affinityOf(a1));
    expect(affinityOf(a3)).not.toBe(affinityOf(a1));
    const g1 = {
      systemInstruction: { parts: [{ text: system }] },
      contents: [{ role: "user", parts: [{ text: "q1" }] }],
    };
    const g2 = { ...g1, contents: [...g1.contents, { role: "model", parts: [{ text: "a" }] }] };
    expect(affinityOf(g2)).toBe(affinityOf(g1));
    expect(affinityOf({ ...g1, contents: [{ role: "user", parts: [{ text: "q2" }] }] })).not.toBe(affinityOf(g1));
    expect(affinityOf({ instructions: "be brief", input: "one" })).not.toBe(
      affinityOf({ instructions: "be brief", input: "two" }),
    );
  });

  it("takes the client's prompt_cache_key when it sends one", () => {
    const a = affinityOf({ prompt_cache_key: "user-42", messages: [{ role: "user", content: "x" }] });
    expect(a).toBe(affinityOf({ prompt_cache_key: "user-42", messages: [{ role: "user", content: "y" }] }));
    expect(a).not.toBe(affinityOf({ prompt_cache_key: "user-43", messages: [{ role: "user", content: "x" }] }));
  });

  it("tells long openings apart by their ends and length, and is null with nothing to read", () => {
    const long = (end: string) => ({ messages: [{ role: "user", content: "x".repeat(50_000) + end }] });
    expect(affinityOf(long("a"))).not.toBe(affinityOf(long("b")));
    expect(affinityOf(long("ab"))).not.toBe(affinityOf(long("a")));
    expect(affinityOf({ model: "m" })).toBeNull();
  });
});
