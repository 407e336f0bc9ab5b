import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, streamObject } from "ai";
import OpenAI from "openai";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";
import { compat } from "../helpers/compat.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";

// Translation by kind through the product (issue 26), with the official SDKs: what the agent CLIs send by
// default reaches another protocol's upstream translated, hints are dropped and named in x-modelgate-dropped and
// on the usage row, and the answer comes back in the client's shape.

let mocks: { openai: MockUpstream; anthropic: MockUpstream; gemini: MockUpstream };
let gw: Gateway;
let base: string;
let apiKey: string;

const MODEL = { openai: "tk-openai-2025-01-01", anthropic: "tk-anthropic-2025-01-01", gemini: "tk-gemini-2025-01-01" };
/** the OpenAI route again, on a model marked strict */
const STRICT = "tk-strict-2025-01-01";

beforeAll(async () => {
  const [o, a, g] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, anthropic: a, gemini: g };
  const ups = ["openai", "anthropic", "gemini"] as const;
  const upstreams = ups.map((p) => ({
    name: `u-${p}`,
    protocol: p,
    baseUrl: mocks[p].url,
    apiKey: "${MOCK_UPSTREAM_KEY}",
  }));
  const models = ups.map((p) => ({
    id: MODEL[p],
    price: { input: 1, output: 2 },
    routes: [{ upstream: `u-${p}`, model: `up-${p}` }],
  }));
  models.push({ id: STRICT, price: { input: 1, output: 2 }, routes: [{ upstream: "u-openai", model: "up-openai" }] });
  (models.at(-1) as Record<string, unknown>).strict = true;
  gw = await startGateway("embedded", { config: { upstreams, models }, env: { MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY } });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "tk", balance: "100" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "tk", name: "tk" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
});

const lastBody = (p: keyof typeof mocks) => mocks[p].requests.at(-1)!.body as Record<string, unknown>;

/** The usage row of one request, once settled. */
async function usageRow(requestId: string): Promise<{ requestId: string; dropped: string[]; status: number }> {
  const rows = await eventually(
    () =>
      gw.admin<{ requestId: string; dropped: string[]; status: number }[]>("usage list", {
        account: "tk",
        limit: "50",
      }),
    (rs) => rs.some((r) => r.requestId === requestId),
  );
  return rows.find((r) => r.requestId === requestId)!;
}

describe("what agents send by default, toward another protocol", () => {
  it("Gemini CLI's generationConfig.topK toward an OpenAI upstream: dropped and named, header and usage row", async () => {
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
    const res = await ai.models.generateContent({
      model: MODEL.openai,
      contents: "hi",
      config: { topK: 64, temperature: 0 },
    });
    expect(res.text).toBeTruthy();
    expect(lastBody("openai")).not.toHaveProperty("top_k");
    expect(res.sdkHttpResponse?.headers?.["x-modelgate-dropped"]).toBe("generationConfig.topK");
    const requestId = res.sdkHttpResponse!.headers!["x-gateway-request-id"]!;
    expect((await usageRow(requestId)).dropped).toEqual(["generationConfig.topK"]);
  });

  it("Claude Code's first request toward OpenAI and Gemini upstreams: system note, effort, context_management", async () => {
    const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
    const body = {
      max_tokens: 1000,
      messages: [
        { role: "user" as const, content: "hi" },
        { role: "system", content: "<env>linux</env>" },
      ],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
      output_config: { effort: "high" },
    } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const toOpenAI = await client.messages.create({ ...body, model: MODEL.openai }).withResponse();
    expect(toOpenAI.data.content[0]).toMatchObject({ type: "text" });
    expect(toOpenAI.response.headers.get("x-modelgate-dropped")).toBe("context_management, output_config.effort");
    expect(lastBody("openai").messages).toEqual([
      { role: "user", content: "hi" },
      { role: "system", content: "<env>linux</env>" },
    ]);
    const toGemini = await client.messages.create({ ...body, model: MODEL.gemini }).withResponse();
    expect(toGemini.data.content[0]).toMatchObject({ type: "text" });
    expect(lastBody("gemini").contents).toEqual([
      { role: "user", parts: [{ text: "hi" }, { text: "<system>\n<env>linux</env>\n</system>" }] },
    ]);
  });

  it(`openai SDK json_object toward an Anthropic upstream: a JSON object back ${compat("openai-sdk", "anthropic", "structured")}`, async () => {
    mocks.anthropic.reply({ toolCalls: [{ name: "modelgate_json_answer", arguments: { ok: true } }] });
    const res = await new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 }).chat.completions.create({
      model: MODEL.anthropic,
      messages: [{ role: "user", content: "JSON please" }],
      response_format: { type: "json_object" },
    });
    expect(JSON.parse(res.choices[0]!.message.content!)).toEqual({ ok: true });
    expect(res.choices[0]!.finish_reason).toBe("stop");
  });

  it(`LangChain's jsonMode and Gemini's JSON without a schema toward an Anthropic upstream: objects back ${compat("langchain", "anthropic", "structured")} ${compat("genai-sdk", "anthropic", "structured")}`, async () => {
    mocks.anthropic.reply(
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Oslo" } }] },
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Rome" } }] },
    );
    const chat = new ChatOpenAI({
      model: MODEL.anthropic,
      apiKey,
      configuration: { baseURL: `${base}/v1` },
      maxRetries: 0,
    });
    const structured = chat.withStructuredOutput(
      { type: "object", properties: { city: { type: "string" } } },
      { method: "jsonMode" },
    );
    expect(await structured.invoke("A city as JSON")).toEqual({ city: "Oslo" });
    expect(lastBody("anthropic").tool_choice).toEqual({ type: "tool", name: "modelgate_json_answer" });
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
    const g = await ai.models.generateContent({
      model: MODEL.anthropic,
      contents: "A city as JSON",
      config: { responseMimeType: "application/json" },
    });
    expect(JSON.parse(g.text!)).toEqual({ city: "Rome" });
  });

  it(`the AI SDK's openai-compatible generateObject and streamObject toward an Anthropic upstream: objects back ${compat("ai-sdk", "anthropic", "structured", "stream")}`, async () => {
    // Without supportsStructuredOutputs the provider asks for response_format json_object (the schema goes in
    // the prompt): toward Anthropic that is the forced JSON tool, streamed and not.
    mocks.anthropic.reply(
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Lima" } }] },
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Oslo" } }] },
    );
    const provider = createOpenAICompatible({ name: "modelgate", baseURL: `${base}/v1`, apiKey });
    const schema = z.object({ city: z.string() });
    const once = await generateObject({ model: provider(MODEL.anthropic), schema, prompt: "A city", maxRetries: 0 });
    expect(once.object).toEqual({ city: "Lima" });
    expect(lastBody("anthropic").tool_choice).toEqual({ type: "tool", name: "modelgate_json_answer" });
    const streamed = streamObject({ model: provider(MODEL.anthropic), schema, prompt: "A city", maxRetries: 0 });
    const partials: unknown[] = [];
    for await (const partial of streamed.partialObjectStream) partials.push(partial); // the stream must be read
    expect(partials.length).toBeGreaterThan(1); // the object arrives piece by piece, as the tool's input streams
    expect(await streamed.object).toEqual({ city: "Oslo" });
    expect(lastBody("anthropic").stream).toBe(true);
  });

  it("a strict model refuses what it would drop, with a 400 naming it; nothing reaches the upstream", async () => {
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
    const calls = mocks.openai.requests.length;
    const err = await ai.models.generateContent({ model: STRICT, contents: "hi", config: { topK: 64 } }).then(
      () => null,
      (e: unknown) => e as { status?: number; message: string },
    );
    expect(err?.status).toBe(400);
    expect(err?.message).toContain("generationConfig.topK");
    expect(err?.message).toContain("strict");
    expect(mocks.openai.requests.length).toBe(calls);
    // Without the hint, the strict model answers.
    expect((await ai.models.generateContent({ model: STRICT, contents: "hi" })).text).toBeTruthy();
  });
});
