import { describe, expect, it } from "vitest";
import { usageEvent } from "./record.ts";

const price = { input: "150000", output: "600000", cachedInput: "75000" };
const u = (promptTokens: number, completionTokens: number, cachedTokens = 0, reasoningTokens = 0) => ({
  promptTokens,
  completionTokens,
  cachedTokens,
  reasoningTokens,
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
});

describe("usageEvent", () => {
  const call = {
    requestId: "r",
    keyId: "k",
    accountId: "a",
    model: "m",
    protocol: "openai" as const,
    upstream: "up",
    stream: false,
    clientIp: null,
    startedAt: Date.now() - 5,
    firstByteAt: null,
  };
  it("never charges a failed call", () => {
    expect(usageEvent(call, u(1000, 1000), price, 502, "upstream_error").cost).toBe("0");
    expect(usageEvent(call, u(1000, 1000), price, 200, null).cost).toBe("750");
  });
});
