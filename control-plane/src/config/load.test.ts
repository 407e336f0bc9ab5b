import { describe, expect, it } from "vitest";
import { parseConfig } from "./load.ts";

const yaml = `
upstreams:
  - name: openai-main
    protocol: openai
    baseUrl: http://127.0.0.1:9000/v1
    apiKey: \${OPENAI_API_KEY}
models:
  - id: gpt-4o-mini-2024-07-18
    reasoning: false
    price: { input: 0.15, output: 0.60 }
    routes: [{ upstream: openai-main, model: gpt-4o-mini-2024-07-18, weight: 1 }]
`;

describe("config file", () => {
  it("parses the documented YAML shape and reads ${VAR} from the environment", () => {
    const c = parseConfig(yaml, { OPENAI_API_KEY: "sk-up" });
    expect(c.upstreams[0]).toEqual({
      name: "openai-main",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:9000/v1",
      apiKey: "sk-up",
    });
    expect(c.models[0]!.price).toEqual({ input: 0.15, output: 0.6 });
    expect(c.models[0]!.routes[0]).toEqual({
      upstream: "openai-main",
      model: "gpt-4o-mini-2024-07-18",
      weight: 1,
      priority: 0,
    });
  });
  it("accepts JSON too", () => {
    const c = parseConfig(
      JSON.stringify({ upstreams: [{ name: "u", protocol: "anthropic", baseUrl: "http://h/v1" }], models: [] }),
    );
    expect(c.upstreams[0]!.protocol).toBe("anthropic");
  });
  it("refuses a missing variable, an unknown upstream and unknown fields, naming them", () => {
    expect(() => parseConfig(yaml, {})).toThrow(/OPENAI_API_KEY/);
    expect(() => parseConfig(yaml.replace("upstream: openai-main", "upstream: nope"), { OPENAI_API_KEY: "x" })).toThrow(
      /unknown upstream nope/,
    );
    expect(() =>
      parseConfig("upstreams:\n  - name: a\n    protocol: openai\n    baseUrl: http://h/v1\n    colour: red\n"),
    ).toThrow(/upstreams.0/);
    expect(() => parseConfig("upstreams:\n  - name: a\n    protocol: grpc\n    baseUrl: http://h/v1\n")).toThrow(
      /protocol/,
    );
    // a secret longer than any provider issues (it would be copied into every data plane's snapshot)
    expect(() => parseConfig(yaml, { OPENAI_API_KEY: "k".repeat(9_000) })).toThrow(/apiKey/);
  });
  it("reads a model's type (chat by default) and refuses an embedding model routed to an upstream that makes none", () => {
    expect(parseConfig(yaml, { OPENAI_API_KEY: "x" }).models[0]!.type).toBe("chat");
    const embedding = yaml.replace("reasoning: false", "type: embedding");
    expect(parseConfig(embedding, { OPENAI_API_KEY: "x" }).models[0]!.type).toBe("embedding");
    expect(() =>
      parseConfig(embedding.replace("protocol: openai", "protocol: anthropic"), { OPENAI_API_KEY: "x" }),
    ).toThrow(/embedding model gpt-4o-mini-2024-07-18 routes to upstream openai-main, whose protocol anthropic/);
    expect(() => parseConfig(yaml.replace("reasoning: false", "type: vision"), { OPENAI_API_KEY: "x" })).toThrow(
      /type/,
    );
  });
  it("refuses a model without a price, or with input or output left out; an explicit 0 is accepted", () => {
    const env = { OPENAI_API_KEY: "x" };
    expect(() => parseConfig(yaml.replace("    price: { input: 0.15, output: 0.60 }\n", ""), env)).toThrow(
      /models.0.price/,
    );
    expect(() => parseConfig(yaml.replace("{ input: 0.15, output: 0.60 }", "{ input: 0.15 }"), env)).toThrow(
      /models.0.price.output/,
    );
    expect(() => parseConfig(yaml.replace("{ input: 0.15, output: 0.60 }", "{ input: '', output: 1 }"), env)).toThrow(
      /models.0.price.input/,
    );
    const free = parseConfig(
      yaml.replace("{ input: 0.15, output: 0.60 }", "{ input: 0, output: 0, cacheWrite5m: 0.2, cacheWrite1h: '0.3' }"),
      env,
    );
    expect(free.models[0]!.price).toEqual({ input: 0, output: 0, cacheWrite5m: 0.2, cacheWrite1h: "0.3" });
  });
  it("an upstream of a provider: its defaults, and what cannot work refused naming the field", () => {
    const one = (u: Record<string, unknown>, model = "m") =>
      parseConfig(
        JSON.stringify({
          upstreams: [{ name: "u", ...u }],
          models: [{ id: "x-2025-01-01", price: { input: 1, output: 1 }, routes: [{ upstream: "u", model }] }],
        }),
      );
    expect(one({ provider: "deepseek", apiKey: "k" }).upstreams[0]).toMatchObject({ provider: "deepseek" });
    expect(() => one({ provider: "deepseek", protocol: "anthropic" })).toThrow(/upstreams.0.protocol: deepseek speaks/);
    expect(() => one({ protocol: "openai" })).toThrow(/upstreams.0.baseUrl: provider direct needs a baseUrl/);
    expect(() => one({ baseUrl: "http://h/v1" })).toThrow(/upstreams.0.protocol: an upstream without a provider/);
    expect(() => one({ provider: "nope", protocol: "openai", baseUrl: "http://h" })).toThrow(/upstreams.0.provider/);
    expect(() => one({ provider: "deepseek", region: "US East" })).toThrow(/upstreams.0.region/);
  });
});
