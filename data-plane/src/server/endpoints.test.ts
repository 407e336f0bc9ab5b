import { describe, expect, it } from "vitest";
import { likelyPath, unknownPath } from "./endpoints.ts";

describe("unknown paths", () => {
  it("names the endpoint behind a missing, doubled or wrong prefix, or a trailing slash", () => {
    expect(likelyPath("/chat/completions", "POST")).toBe("/v1/chat/completions");
    expect(likelyPath("/v1/v1/chat/completions", "POST")).toBe("/v1/chat/completions");
    expect(likelyPath("/v1//messages", "POST")).toBe("/v1/messages");
    expect(likelyPath("/v1/messages/", "POST")).toBe("/v1/messages");
    expect(likelyPath("/v1beta/v1beta/models/gemini-x:generateContent", "POST")).toBe(
      "/v1beta/models/gemini-x:generateContent",
    );
    expect(likelyPath("/models", "GET")).toBe("/v1/models");
  });

  it("suggests nothing for a path like no endpoint, or another method's", () => {
    expect(likelyPath("/v1/completions", "POST")).toBeNull();
    expect(likelyPath("/v1/assistants", "GET")).toBeNull();
    expect(likelyPath("/chat/completions", "GET")).toBeNull();
  });

  it("lists the endpoints that exist and blames the base URL only with a likely path", () => {
    const plain = unknownPath("/v1/completions", "POST").message;
    expect(plain).toContain("This gateway serves: POST /v1/chat/completions");
    expect(plain).not.toContain("base URL");
    const meant = unknownPath("/chat/completions", "POST").message;
    expect(meant).toContain("Did you mean '/v1/chat/completions'?");
    expect(meant).toContain("base URL ends in '/v1'");
    expect(unknownPath("/x".repeat(500), "GET").message.length).toBeLessThan(1000);
  });
});
