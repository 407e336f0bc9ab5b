import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { expect } from "vitest";
import type { MockUsage } from "../mocks/script.ts";
import type { Gateway } from "./gateway.ts";
import { usageRowOf } from "./usage-row.ts";

// The calls every provider test (test/embedded/providers-*.test.ts) makes through each client protocol's
// official SDK, streamed and not: one "Hi" to a model, the scripted answer and its usage checked as that
// client sees them. Each returns the gateway's request id, for the test to check the bill and what reached
// its upstream, which differ by provider.

export interface SdkCall {
  base: string;
  key: string;
  stream: boolean;
  /** The gateway's model id. */
  model: string;
  /** The answer the upstream was scripted to give, joined. */
  text: string;
  /** The usage the upstream was scripted to report. */
  usage: MockUsage;
}

/** The openai SDK's chat completions; `extra` joins the request (max_tokens). */
export async function chatViaOpenAI(
  c: SdkCall,
  extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {},
): Promise<string | null> {
  const client = new OpenAI({ baseURL: `${c.base}/v1`, apiKey: c.key, maxRetries: 0 });
  const params = { model: c.model, messages: [{ role: "user" as const, content: "Hi" }], ...extra };
  let text = "";
  let usage: OpenAI.CompletionUsage | undefined;
  let requestId: string | null;
  if (!c.stream) {
    const { data, response } = await client.chat.completions.create(params).withResponse();
    requestId = response.headers.get("x-gateway-request-id");
    text = data.choices[0]!.message.content ?? "";
    usage = data.usage;
    expect(data.model).toBe(c.model);
  } else {
    const { data, response } = await client.chat.completions
      .create({ ...params, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    requestId = response.headers.get("x-gateway-request-id");
    for await (const chunk of data) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
  }
  expect(text).toBe(c.text);
  expect(usage).toMatchObject({
    prompt_tokens: c.usage.promptTokens,
    completion_tokens: c.usage.completionTokens,
    prompt_tokens_details: { cached_tokens: c.usage.cachedTokens },
  });
  return requestId;
}

/**
 * The Anthropic SDK's messages (`create`, or `stream` and its final message); `extra` joins the request,
 * `options` its request options (betas). Checks the answer's text; the test checks its usage, which each
 * provider reports with its own cache writes.
 */
export async function messagesViaAnthropic(
  c: SdkCall,
  extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
  options?: Anthropic.RequestOptions,
): Promise<{ msg: Anthropic.Message; requestId: string | null }> {
  const client = new Anthropic({ baseURL: c.base, apiKey: c.key, maxRetries: 0 });
  const params = { model: c.model, max_tokens: 100, ...extra, messages: [{ role: "user" as const, content: "Hi" }] };
  let msg: Anthropic.Message;
  let requestId: string | null;
  if (!c.stream) {
    const { data, response } = await client.messages.create(params, options).withResponse();
    requestId = response.headers.get("x-gateway-request-id");
    msg = data;
  } else {
    const s = client.messages.stream(params, options);
    const { response } = await s.withResponse();
    requestId = response.headers.get("x-gateway-request-id");
    msg = await s.finalMessage();
  }
  expect(msg.content.map((b) => (b.type === "text" ? b.text : b.type))).toEqual([c.text]);
  return { msg, requestId };
}

/** @google/genai's generateContent (or its stream); `config` joins the request. */
export async function generateViaGenai(c: SdkCall, config?: { maxOutputTokens?: number }): Promise<string | null> {
  const ai = new GoogleGenAI({ apiKey: c.key, httpOptions: { baseUrl: c.base, apiVersion: "v1beta" } });
  const req = { model: c.model, contents: "Hi", ...(config ? { config } : {}) };
  let text = "";
  let usage: unknown;
  let requestId: string | null = null;
  if (!c.stream) {
    const r = await ai.models.generateContent(req);
    requestId = r.sdkHttpResponse?.headers?.["x-gateway-request-id"] ?? null;
    text = r.text ?? "";
    usage = r.usageMetadata;
  } else {
    for await (const chunk of await ai.models.generateContentStream(req)) {
      requestId ??= chunk.sdkHttpResponse?.headers?.["x-gateway-request-id"] ?? null;
      text += chunk.text ?? "";
      if (chunk.usageMetadata) usage = chunk.usageMetadata;
    }
  }
  expect(text).toBe(c.text);
  expect(usage).toMatchObject({
    promptTokenCount: c.usage.promptTokens,
    candidatesTokenCount: c.usage.completionTokens,
    cachedContentTokenCount: c.usage.cachedTokens,
  });
  return requestId;
}

/** The usage the Anthropic SDK reports for a scripted usage: input without the cache reads and writes. */
export function anthropicUsageOf(u: MockUsage): Partial<Anthropic.Usage> {
  const writes = (u.cacheWrite5mTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
  return {
    input_tokens: u.promptTokens - u.cachedTokens! - writes,
    cache_read_input_tokens: u.cachedTokens,
    cache_creation_input_tokens: writes,
    output_tokens: u.completionTokens,
  };
}

/** The call's usage row: the scripted counts, each cache class apart, billed exactly at `costMicro`. */
export async function expectBilledExactly(
  gw: Gateway,
  account: string,
  requestId: string | null,
  bill: { model: string; usage: MockUsage; costMicro: string },
): Promise<void> {
  expect(requestId).toMatch(/^req_/);
  const u = bill.usage;
  expect(await usageRowOf(gw, account, requestId!)).toMatchObject({
    model: bill.model,
    status: 200,
    promptTokens: u.promptTokens,
    completionTokens: u.completionTokens,
    cachedTokens: u.cachedTokens,
    cacheWrite5mTokens: u.cacheWrite5mTokens ?? 0,
    cacheWrite1hTokens: u.cacheWrite1hTokens ?? 0,
    costMicro: bill.costMicro,
    estimated: false,
  });
}
