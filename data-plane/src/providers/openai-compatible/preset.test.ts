import { describe, expect, it } from "vitest";
import type { RouteSnapshot } from "../../contract/index.ts";
import { providers } from "../index.ts";
import type { ProviderContext } from "../types.ts";

// Each OpenAI-compatible preset: its documented endpoint, its bearer key (or none for local servers), and
// the body it is sent; what its answers add is read by the OpenAI protocol (usage-quirks.test.ts).

const PRESETS = {
  deepseek: "https://api.deepseek.com/v1",
  openrouter: "https://openrouter.ai/api/v1",
  groq: "https://api.groq.com/openai/v1",
  mistral: "https://api.mistral.ai/v1",
  xai: "https://api.x.ai/v1",
  together: "https://api.together.xyz/v1",
  fireworks: "https://api.fireworks.ai/inference/v1",
  moonshot: "https://api.moonshot.ai/v1",
  qwen: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
  vllm: "http://127.0.0.1:8000/v1",
  ollama: "http://127.0.0.1:11434/v1",
} as const;

const ctx = (key: string | null): ProviderContext => ({
  apiKey: () => key,
  secrets: () => ({}),
  logger: { warn: () => {}, error: () => {} },
});

const route = (provider: string, baseUrl: string): RouteSnapshot => ({
  upstream: provider,
  provider,
  protocol: "openai",
  baseUrl,
  apiKeyEnc: null,
  upstreamModel: "m",
  weight: 1,
  priority: 0,
  connectTimeoutMs: 1000,
  firstByteTimeoutMs: 1000,
  idleTimeoutMs: 1000,
});

describe("OpenAI-compatible presets", () => {
  for (const [name, base] of Object.entries(PRESETS)) {
    const p = providers[name as keyof typeof PRESETS];
    it(`${name}: ${base}/chat/completions with a bearer key, speaking OpenAI's protocol`, () => {
      expect(p.defaultBaseUrl({})).toBe(base);
      expect(p.protocolFor("any-model", null)).toBe("openai");
      expect(() => p.protocolFor("any-model", "anthropic")).toThrow(/protocol openai/);
      const body = JSON.stringify({ model: "m", messages: [] });
      const req = p.prepare(
        route(name, base),
        { path: "/chat/completions", body, op: "generate", stream: false },
        ctx("sk-vendor"),
      ) as { url: string; headers: Record<string, string>; body: string };
      expect(req.url).toBe(`${base}/chat/completions`);
      expect(req.headers.authorization).toBe("Bearer sk-vendor");
      expect(req.body).toBe(body);
    });
  }
  it("local servers need no key and send none", () => {
    expect(providers.vllm.needsKey).toBe(false);
    expect(providers.ollama.needsKey).toBe(false);
    expect(providers.deepseek.needsKey).toBe(true);
    const req = providers.ollama.prepare(
      route("ollama", PRESETS.ollama),
      { path: "/chat/completions", body: "{}", op: "generate", stream: false },
      ctx(null),
    ) as { headers: Record<string, string> };
    expect(req.headers.authorization).toBeUndefined();
  });
  it("Mistral declares that its streams carry their usage unasked (no stream_options); its body is sent as built", () => {
    // The OpenAI request builder and passthrough read the trait (rules.test.ts): prepare changes no byte.
    expect(providers.mistral.streamUsageUnasked).toBe(true);
    for (const name of Object.keys(PRESETS).filter((n) => n !== "mistral"))
      expect(providers[name as keyof typeof PRESETS].streamUsageUnasked, name).toBeUndefined();
    const streamed = JSON.stringify({ model: "m", stream: true, messages: [] });
    const req = providers.mistral.prepare(
      route("mistral", PRESETS.mistral),
      { path: "/chat/completions", body: streamed, op: "generate", stream: true },
      ctx("k"),
    ) as { body: string };
    expect(req.body).toBe(streamed);
  });
  it("the operator's baseUrl wins over the preset's", () => {
    const req = providers.deepseek.prepare(
      route("deepseek", "http://127.0.0.1:9/proxy/v1"),
      { path: "/chat/completions", body: "{}", op: "generate", stream: false },
      ctx("k"),
    ) as { url: string };
    expect(req.url).toBe("http://127.0.0.1:9/proxy/v1/chat/completions");
  });
});
