import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { type Upstream, compat } from "../helpers/compat.ts";
import { eventually } from "../helpers/processes.ts";
import {
  type CompatibleUpstream,
  type VendorFixture,
  startCompatibleUpstream,
} from "../mocks/openai-compatible-upstream.ts";

// The OpenAI-compatible presets end to end (issue 27, item 4): an upstream declared `provider: deepseek` (and
// groq, moonshot, openrouter, mistral) answers as the vendor documents; the vendor's reasoning reaches every
// client protocol and its cache counts reach the client's usage and the bill, driven with the official
// openai, Anthropic and Google SDKs, streamed and not.

const KEY = "sk-vendor-key";
// 2 micro-units an input token, 0.5 a cached one, 4 an output token.
const PRICE = { input: 2, output: 4, cachedInput: 0.5 };
const micro = (u: { prompt: number; cached: number; completion: number }) =>
  BigInt((u.prompt - u.cached) * 2 + u.cached * 0.5 + u.completion * 4);

const FIXTURES: Record<string, VendorFixture & { billed: { prompt: number; cached: number; completion: number } }> = {
  deepseek: {
    reasoning: "The user greets me.",
    text: "Hello from DeepSeek",
    usage: {
      prompt_tokens: 1200,
      completion_tokens: 40,
      total_tokens: 1240,
      prompt_cache_hit_tokens: 1024,
      prompt_cache_miss_tokens: 176,
      completion_tokens_details: { reasoning_tokens: 12 },
    },
    streamUsage: "usage",
    billed: { prompt: 1200, cached: 1024, completion: 40 },
  },
  groq: {
    reasoningField: "reasoning",
    reasoning: "Groq thinks.",
    text: "Hello from Groq",
    usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 },
    streamUsage: "x_groq",
    billed: { prompt: 30, cached: 0, completion: 7 },
  },
  moonshot: {
    reasoning: "Kimi thinks.",
    text: "Hello from Kimi",
    usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, cached_tokens: 64 },
    streamUsage: "usage",
    billed: { prompt: 100, cached: 64, completion: 5 },
  },
  openrouter: {
    reasoningField: "reasoning",
    reasoning: "OpenRouter thinks.",
    text: "Hello from OpenRouter",
    usage: {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { cached_tokens: 40 },
    },
    streamUsage: "usage",
    billed: { prompt: 100, cached: 40, completion: 10 },
  },
  mistral: {
    reasoning: "",
    text: "Hello from Mistral",
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    streamUsage: "always",
    billed: { prompt: 12, cached: 0, completion: 3 },
  },
};
const VENDORS = Object.keys(FIXTURES);
const model = (v: string) => `${v}-chat-2025-01-01`;

let up: CompatibleUpstream;
let gw: Gateway;
let base: string;
let apiKey: string;

beforeAll(async () => {
  up = await startCompatibleUpstream(KEY, FIXTURES);
  const config = {
    upstreams: VENDORS.map((v) => ({ name: v, provider: v, baseUrl: `${up.url}/${v}/v1`, apiKey: "${VENDOR_KEY}" })),
    models: VENDORS.map((v) => ({
      id: model(v),
      reasoning: true,
      price: PRICE,
      routes: [{ upstream: v, model: `${v}-upstream-model` }],
    })),
  };
  gw = await startGateway("embedded", { config, env: { VENDOR_KEY: KEY } });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "presets", balance: "100" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "presets", name: "presets" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

async function billed(requestId: string): Promise<bigint> {
  const rows = await eventually(
    () => gw.usage("presets", 200),
    (r) => r.some((x) => x.requestId === requestId),
  );
  return rows.find((x) => x.requestId === requestId)!.costMicro;
}

const openai = () => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const messages = [{ role: "user" as const, content: "Hi" }];

describe("OpenAI-compatible presets through the gateway", () => {
  for (const v of VENDORS) {
    const f = FIXTURES[v]!;
    const tag = v as Upstream;
    const cache = f.billed.cached > 0 ? (["cache"] as const) : [];
    const think = f.reasoning ? (["reasoning"] as const) : [];
    it(`${v}: the openai SDK, not streamed, gets the vendor's answer; its cache counts are billed ${compat("openai-sdk", tag, "text", "usage", ...cache)}`, async () => {
      const { data, response } = await openai()
        .chat.completions.create({ model: model(v), messages })
        .withResponse();
      expect(data.choices[0]!.message.content).toBe(f.text);
      expect(data.model).toBe(model(v));
      const sent = up.requests.at(-1)!;
      expect(sent).toMatchObject({ vendor: v, authorization: `Bearer ${KEY}` });
      expect(sent.body.model).toBe(`${v}-upstream-model`);
      expect(await billed(response.headers.get("x-gateway-request-id")!)).toBe(micro(f.billed));
    });
    it(`${v}: the openai SDK, streamed, reads the text; the usage the vendor streams is billed ${compat("openai-sdk", tag, "stream")}`, async () => {
      const { data, response } = await openai()
        .chat.completions.create({ model: model(v), messages, stream: true })
        .withResponse();
      let text = "";
      for await (const c of data) text += c.choices[0]?.delta.content ?? "";
      expect(text).toBe(f.text);
      expect(await billed(response.headers.get("x-gateway-request-id")!)).toBe(micro(f.billed));
    });
    it(`${v}: the Anthropic SDK, streamed and not, gets thinking, text and the cache reads ${compat("anthropic-sdk", tag, "text", "stream", "usage", ...think, ...cache)}`, async () => {
      const { data, response } = await anthropic()
        .messages.create({ model: model(v), max_tokens: 256, messages })
        .withResponse();
      expect(data.content.find((b) => b.type === "text")).toMatchObject({ text: f.text });
      if (f.reasoning) expect(data.content[0]).toMatchObject({ type: "thinking", thinking: f.reasoning });
      expect(data.usage.cache_read_input_tokens ?? 0).toBe(f.billed.cached);
      expect(data.usage.input_tokens + (data.usage.cache_read_input_tokens ?? 0)).toBe(f.billed.prompt);
      expect(await billed(response.headers.get("x-gateway-request-id")!)).toBe(micro(f.billed));

      const stream = anthropic().messages.stream({ model: model(v), max_tokens: 256, messages });
      const final = await stream.finalMessage();
      expect(final.content.find((b) => b.type === "text")).toMatchObject({ text: f.text });
      expect(final.usage.output_tokens).toBe(f.billed.completion);
    });
  }
  it(`deepseek: the Gemini SDK gets the reasoning as a thought and the cache reads as cachedContentTokenCount ${compat("genai-sdk", "deepseek", "text", "reasoning", "usage", "cache")}`, async () => {
    const g = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
    const res = await g.models.generateContent({
      model: model("deepseek"),
      contents: "Hi",
      config: { thinkingConfig: { includeThoughts: true } },
    });
    expect(res.text).toBe(FIXTURES.deepseek!.text);
    expect(res.candidates![0]!.content!.parts![0]).toMatchObject({ thought: true, text: FIXTURES.deepseek!.reasoning });
    expect(res.usageMetadata).toMatchObject({ promptTokenCount: 1200, cachedContentTokenCount: 1024 });
  });
  it("mistral: a stream is sent without the stream_options its API refuses", () => {
    const streamed = up.requests.filter((r) => r.vendor === "mistral" && r.body.stream === true);
    expect(streamed.length).toBeGreaterThan(0);
    for (const r of streamed) expect(r.body).not.toHaveProperty("stream_options");
  });
  it("mistral: an OpenAI client's stream_options is not passed on; the usage reaches the bill, and the client if it asked", async () => {
    // The mock refuses a body with stream_options (422), as Mistral's API does: passed on, the call would fail.
    const f = FIXTURES.mistral!;
    for (const asked of [true, false]) {
      const before = up.requests.length;
      const { data, response } = await openai()
        .chat.completions.create({
          model: model("mistral"),
          messages,
          stream: true,
          stream_options: { include_usage: asked },
        })
        .withResponse();
      let text = "";
      const usage: unknown[] = [];
      for await (const c of data) {
        text += c.choices[0]?.delta.content ?? "";
        if (c.usage) usage.push(c.usage);
      }
      expect(text).toBe(f.text);
      expect(usage, `include_usage: ${asked}`).toEqual(
        asked ? [expect.objectContaining({ prompt_tokens: 12, completion_tokens: 3 })] : [],
      );
      const sent = up.requests.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body).not.toHaveProperty("stream_options");
      expect(await billed(response.headers.get("x-gateway-request-id")!)).toBe(micro(f.billed));
    }
  });
});
