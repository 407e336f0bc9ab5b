import { describe, expect, it } from "vitest";
import { replaceModelField } from "./model-field.ts";

describe("replaceModelField", () => {
  it("swaps the model and leaves every other byte as it was", () => {
    const text =
      '{\n  "id": "x",\n  "model": "gpt-4o-mini-2024-07-18",\n  "choices": [{"message": {"content": "say \\"model\\": \\"gpt-4o-mini-2024-07-18\\""}}],\n  "n": 1.0\n}';
    const out = replaceModelField(text, "gpt-4o-mini-2024-07-18", "team-chat");
    expect(out).toBe(text.replace('"model": "gpt-4o-mini-2024-07-18"', '"model": "team-chat"'));
    expect(JSON.parse(out!).model).toBe("team-chat");
    expect(JSON.parse(out!).choices[0].message.content).toBe('say "model": "gpt-4o-mini-2024-07-18"');
  });

  it("handles names that need escaping or are regex syntax", () => {
    const text = JSON.stringify({ model: 'a.b+c"d', x: 1 });
    expect(JSON.parse(replaceModelField(text, 'a.b+c"d', "e\\f")!)).toEqual({ model: "e\\f", x: 1 });
    expect(replaceModelField(JSON.stringify({ model: "aXb" }), "a.b", "c")).toBeNull();
  });

  it("gives up (null) when the pair is missing or appears twice", () => {
    expect(replaceModelField(JSON.stringify({ id: "x" }), "m", "n")).toBeNull();
    expect(replaceModelField(JSON.stringify({ model: "m", extra: { model: "m" } }), "m", "n")).toBeNull();
  });
});
