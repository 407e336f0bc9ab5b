import { describe, expect, it } from "vitest";
import { GatewayError } from "../errors.ts";
import type { ModelSnapshot } from "../contract/index.ts";
import {
  type CanonicalRequest,
  type CanonicalResponse,
  type CanonicalStreamEvent,
  type ProtocolAdapter,
  adapters,
  protocols,
} from "./index.ts";

// One contract every protocol adapter keeps (in the style of Hono's *.case.test.ts), run against each adapter
// in the registry: a new protocol gets these checks by registering itself. What one adapter writes as a client
// protocol, the same adapter reads back as an upstream protocol (requests, answers, streams), its errors carry
// the request id, its routes are its own, and its same-protocol relay reads usage from its own answers. A
// protocol that makes embeddings owns its embeddings routes and reads back its own embeddings too.

const REQUEST: CanonicalRequest = {
  model: "m-1",
  system: ["Be brief."],
  messages: [
    { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Checking." },
        { type: "tool_call", id: "call_1", name: "weather", arguments: '{"city":"Paris"}' },
      ],
    },
    { role: "tool", toolCallId: "call_1", name: "weather", content: [{ type: "text", text: '{"c":18}' }] },
  ],
  tools: [
    {
      name: "weather",
      description: "Weather by city",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    },
  ],
  maxOutputTokens: 256,
  temperature: 0.5,
  stream: false,
};

const RESPONSE: CanonicalResponse = {
  id: "r1",
  model: "m-1",
  created: 1_700_000_000,
  content: [
    { type: "text", text: "It is sunny." },
    { type: "tool_call", id: "call_2", name: "weather", arguments: '{"city":"Lyon"}' },
  ],
  finishReason: "tool_calls",
  usage: { promptTokens: 120, completionTokens: 30, reasoningTokens: 0, cachedTokens: 20 },
};

const EVENTS: CanonicalStreamEvent[] = [
  { type: "start", id: "r1", model: "m-1", created: 1_700_000_000 },
  { type: "text", text: "It is " },
  { type: "text", text: "sunny." },
  { type: "tool_call_start", index: 0, id: "call_2", name: "weather" },
  { type: "tool_call_delta", index: 0, arguments: '{"city":' },
  { type: "tool_call_delta", index: 0, arguments: '"Lyon"}' },
  { type: "finish", reason: "tool_calls" },
  { type: "usage", usage: RESPONSE.usage },
  { type: "end" },
];

const MODEL: ModelSnapshot = {
  id: "m-1",
  displayName: null,
  reasoning: false,
  price: { input: "1", output: "2", cachedInput: null },
  routes: [],
  createdAt: "2026-01-01T00:00:00.000Z",
};

const ctx = { model: "m-1", requestId: "req_0123456789abcdef01234567" };
const texts = (r: CanonicalRequest) =>
  r.messages.map((m) =>
    (m.role === "system" ? [{ type: "text" as const, text: m.text }] : m.content)
      .map((p) => ("text" in p ? p.text : p.type === "tool_call" ? `${p.name}(${p.arguments})` : p.type))
      .join("|"),
  );
const toolCalls = (parts: CanonicalResponse["content"]) =>
  parts.flatMap((p) =>
    p.type === "tool_call" ? [{ id: p.id, name: p.name, args: JSON.parse(p.arguments) as unknown }] : [],
  );

function generateRoute(a: ProtocolAdapter, stream: boolean) {
  const ep = a.endpoints.find((e) => e.op === "generate")!;
  // Each protocol's own generation path, as its clients call it.
  const path =
    a.name === "gemini"
      ? `/v1beta/models/m-1:${stream ? "streamGenerateContent" : "generateContent"}`
      : { openai: "/v1/chat/completions", anthropic: "/v1/messages", "openai-responses": "/v1/responses" }[a.name];
  return ep.match(path!, new URLSearchParams(stream ? "alt=sse" : ""));
}

async function streamText(a: ProtocolAdapter, events: CanonicalStreamEvent[]): Promise<string> {
  const enc = a.createClientStreamEncoder({ ...ctx, includeUsage: true });
  let out = events.map((e) => enc.encode(e)).join("");
  if (enc.close) out += await enc.close();
  return out;
}

describe.each(adapters.map((a) => [a.name, a] as const))("protocol adapter %s", (name, a) => {
  it("is registered under its name and owns its generation route", () => {
    expect(protocols[name]).toBe(a);
    expect(generateRoute(a, false)).not.toBeNull();
    // No other adapter claims the route.
    for (const other of adapters.filter((o) => o !== a)) {
      const path = {
        openai: "/v1/chat/completions",
        anthropic: "/v1/messages",
        gemini: "/v1beta/models/m-1:generateContent",
        "openai-responses": "/v1/responses",
      }[name];
      expect(other.endpoints.some((e) => e.match(path, null) !== null)).toBe(false);
    }
  });

  it("reads back, as a client request, what it builds as an upstream request", () => {
    const up = a.buildUpstreamRequest(REQUEST, "m-1", { stream: false });
    expect(up.path.startsWith("/")).toBe(true);
    const back = a.parseClientRequest(up.body, generateRoute(a, false) ?? undefined);
    expect(back.model).toBe("m-1");
    expect(back.system.join("\n\n")).toBe("Be brief.");
    expect(texts(back)).toEqual(texts(REQUEST));
    expect(back.tools?.map((t) => t.name)).toEqual(["weather"]);
    expect(back.maxOutputTokens).toBe(256);
    expect(back.temperature).toBe(0.5);
  });

  it("reads back, as an upstream answer, what it renders for a client", () => {
    const rendered = a.renderClientResponse(RESPONSE, ctx);
    const back = a.parseUpstreamResponse(JSON.parse(JSON.stringify(rendered)));
    expect(
      back.content
        .filter((p) => p.type === "text")
        .map((p) => (p as { text: string }).text)
        .join(""),
    ).toBe("It is sunny.");
    expect(toolCalls(back.content)).toEqual([{ id: expect.any(String), name: "weather", args: { city: "Lyon" } }]);
    expect(back.finishReason).toBe("tool_calls");
    expect(back.usage.promptTokens).toBe(120);
    expect(back.usage.completionTokens).toBe(30);
    expect(back.usage.cachedTokens).toBe(20);
  });

  it("decodes, as an upstream stream, what it encodes for a client, in any chunking", async () => {
    const bytes = Buffer.from(await streamText(a, EVENTS));
    for (const size of [bytes.length, 7, 1]) {
      const dec = a.createUpstreamStreamDecoder();
      const events: CanonicalStreamEvent[] = [];
      for (let i = 0; i < bytes.length; i += size) events.push(...dec.push(bytes.subarray(i, i + size)));
      events.push(...dec.end());
      expect(
        events
          .filter((e) => e.type === "text")
          .map((e) => (e as { text: string }).text)
          .join(""),
      ).toBe("It is sunny.");
      const args = events
        .filter((e) => e.type === "tool_call_delta")
        .map((e) => (e as { arguments: string }).arguments)
        .join("");
      expect(JSON.parse(args)).toEqual({ city: "Lyon" });
      expect(events.find((e) => e.type === "tool_call_start")).toMatchObject({ name: "weather" });
      expect(events.filter((e) => e.type === "finish").at(-1)).toMatchObject({ reason: "tool_calls" });
      expect(events.filter((e) => e.type === "usage").at(-1)).toMatchObject({
        usage: { promptTokens: 120, completionTokens: 30 },
      });
      expect(events.at(-1)).toEqual({ type: "end" });
    }
  });

  it("reports a stream cut short as an error event", () => {
    const dec = a.createUpstreamStreamDecoder();
    const events = [...dec.push(Buffer.from("")), ...dec.end()];
    expect(events.at(-1)?.type).toBe("error");
  });

  it("ends a client stream with its own error event, carrying the request id", async () => {
    const err = new GatewayError("upstream", "upstream_stream_error", "The upstream failed mid-stream.");
    const out = await streamText(a, [
      { type: "start", id: "r1", model: "m-1", created: 1 },
      { type: "text", text: "Hi" },
      { type: "error", error: err },
    ]);
    expect(out).toContain(ctx.requestId);
    expect(a.errorFrame(err, ctx.requestId)).toContain(ctx.requestId);
    const dec = a.createUpstreamStreamDecoder();
    expect(
      [...dec.push(Buffer.from(a.errorFrame(err, ctx.requestId))), ...dec.end()].some((e) => e.type === "error"),
    ).toBe(true);
  });

  it("renders errors with the status, the code's kind and the request id, and reads its own back", () => {
    const err = new GatewayError("rate_limit", "rate_limit_exceeded", "Slow down.");
    const r = a.renderError(err, ctx.requestId);
    expect(r.status).toBe(429);
    expect(r.body).toContain(ctx.requestId);
    expect(a.parseUpstreamError(429, r.body).kind).toBe("rate_limit");
  });

  it("lists models in its shape", () => {
    expect(JSON.stringify(a.renderModelList([MODEL]))).toContain("m-1");
    expect(JSON.stringify(a.renderModel(MODEL))).toContain("m-1");
  });

  it("passes its own answers through, reading their usage", async () => {
    const pt = a.passthrough;
    if (!pt) return;
    const rendered = JSON.stringify(a.renderClientResponse(RESPONSE, ctx));
    const json = pt.readJson(rendered, "m-1", 99);
    expect(json.usage).toMatchObject({ promptTokens: 120, completionTokens: 30, cachedTokens: 20 });
    expect(json.exact).toBe(true);
    expect(JSON.parse(json.body)).toEqual(JSON.parse(rendered));
    const reader = pt.createStream("m-1", ctx.requestId, { ...REQUEST, stream: true, streamIncludeUsage: true });
    const bytes = await streamText(a, EVENTS);
    const pushed = reader.push(Buffer.from(bytes));
    const out = (typeof pushed === "string" ? pushed : Buffer.from(pushed).toString()) + reader.end();
    expect(reader.complete).toBe(true);
    expect(reader.error).toBeNull();
    expect(reader.usage).toMatchObject({ promptTokens: 120, completionTokens: 30 });
    expect(out).toContain("sunny.");
    // An error the gateway writes into the stream is this protocol's error frame, with the request id.
    const broke = new GatewayError("upstream", "upstream_stream_error", "The upstream broke off.");
    const frame = reader.errorFrame(broke);
    expect(frame).toContain(ctx.requestId);
    const dec = a.createUpstreamStreamDecoder();
    expect([...dec.push(Buffer.from(frame)), ...dec.end()].some((e) => e.type === "error")).toBe(true);
  });

  it("names its OpenTelemetry provider", () => {
    expect(a.providerName).toMatch(/^[a-z][a-z0-9._]*$/);
  });

  it("declares embeddings routes only with its embeddings, and reads back what it builds as an upstream", () => {
    const routes = a.endpoints.filter((e) => e.op === "embed");
    const e = a.embeddings;
    if (!e) {
      expect(routes).toEqual([]);
      return;
    }
    expect(routes.length).toBeGreaterThan(0);
    // The path an upstream of this protocol is sent (relative to its base URL) is one of its own routes.
    const routeOf = (path: string) => {
      for (const ep of routes) {
        const r = ep.match(`${a.basePath}${path}`, null);
        if (r) return r;
      }
      throw new Error(`no embed route of ${a.name} answers ${path}`);
    };
    const up = e.buildUpstreamRequest({ model: "m-1", inputs: ["a", "b c"], dimensions: 8 }, "m-1");
    const call = e.parseClientRequest(JSON.parse(JSON.stringify(up.body)), routeOf(up.path));
    expect(call.request).toEqual({ model: "m-1", inputs: ["a", "b c"], dimensions: 8 });
    // The client's own body goes to a same-protocol upstream by one of its routes, renamed for another model.
    expect(routeOf(call.passthroughPath("up-1"))).toBeTruthy();
    expect(JSON.stringify(call.renamedBody(up.body, "up-1"))).toContain("up-1");
    // What it renders for a client, it reads back as an upstream answer.
    const vectors = [
      [0.5, -1],
      [2, 0.25],
    ];
    const rendered = call.render({ vectors, promptTokens: 7 }, 7);
    const back = e.parseUpstreamResponse(JSON.parse(JSON.stringify(rendered)));
    expect(back.vectors).toEqual(vectors);
    if (back.promptTokens !== null) expect(back.promptTokens).toBe(7);
    // A renamed same-protocol answer goes back readable, with the client's vectors.
    const relayed = call.relayRenamed(JSON.stringify(rendered), rendered);
    expect(e.parseUpstreamResponse(JSON.parse(relayed)).vectors).toEqual(vectors);
    expect(relayed).not.toContain("up-1");
    // A parameter only another protocol carries is refused by name, as a 400.
    let refused: unknown;
    try {
      e.buildUpstreamRequest({ model: "m-1", inputs: ["a"], untranslatable: ["taskType"] }, "m-1");
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ status: 400, param: "taskType" });
  });
});
