import { describe, expect, it } from "vitest";
import { upstreamBase } from "./base-url.ts";

describe("upstream base URLs", () => {
  it("adds the protocol's version to a bare host", () => {
    expect(upstreamBase("anthropic", "https://api.anthropic.com")).toBe("https://api.anthropic.com/v1");
    expect(upstreamBase("anthropic", "https://api.anthropic.com/")).toBe("https://api.anthropic.com/v1");
    expect(upstreamBase("gemini", "https://generativelanguage.googleapis.com")).toBe(
      "https://generativelanguage.googleapis.com/v1beta",
    );
    expect(upstreamBase("openai", "https://api.openai.com")).toBe("https://api.openai.com/v1");
    expect(upstreamBase("openai", "http://127.0.0.1:8080")).toBe("http://127.0.0.1:8080/v1");
  });

  it("uses a base URL with a path as written, without its trailing slashes", () => {
    expect(upstreamBase("anthropic", "https://api.anthropic.com/v1")).toBe("https://api.anthropic.com/v1");
    expect(upstreamBase("gemini", "https://generativelanguage.googleapis.com/v1beta/")).toBe(
      "https://generativelanguage.googleapis.com/v1beta",
    );
    expect(upstreamBase("gemini", "https://generativelanguage.googleapis.com/v1")).toBe(
      "https://generativelanguage.googleapis.com/v1",
    );
    expect(upstreamBase("openai", "https://api.groq.com/openai/v1")).toBe("https://api.groq.com/openai/v1");
    expect(upstreamBase("openai", "https://proxy.example/openai")).toBe("https://proxy.example/openai");
  });

  it("leaves the demo upstream and URLs it cannot extend alone", () => {
    expect(upstreamBase("demo", "demo://local")).toBe("demo://local");
    expect(upstreamBase("openai", "https://h.example?x=1")).toBe("https://h.example?x=1");
  });
});
