// The translation rules the gateway promises, one assertion each (the golden suite covers whole documents).

import { describe, expect, it } from "vitest";
import { GatewayError } from "../errors.ts";
import { type CanonicalRequest, DEFAULT_ANTHROPIC_MAX_TOKENS, REASONING_BUDGET, protocols } from "./index.ts";
import type { UpstreamTraits } from "./types.ts";

const base = (over: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  model: "m",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  stream: false,
  ...over,
});

function gatewayError(fn: () => unknown): { kind: string; code: string; param: string | null; message: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return { kind: e.kind, code: e.code, param: e.param, message: e.message };
    throw e;
  }
  throw new Error("expected a GatewayError");
}

describe("upstream auth and paths", () => {
  it("uses each vendor's auth header", () => {
    expect(protocols.openai.authHeaders("k")).toEqual({ authorization: "Bearer k" });
    expect(protocols.anthropic.authHeaders("k")).toEqual({ "x-api-key": "k", "anthropic-version": "2023-06-01" });
    expect(protocols.gemini.authHeaders("k")).toEqual({ "x-goog-api-key": "k" });
  });
  it("builds paths relative to the base URL", () => {
    expect(protocols.openai.buildUpstreamRequest(base(), "gpt", { stream: false }).path).toBe("/chat/completions");
    expect(protocols.anthropic.buildUpstreamRequest(base(), "claude", { stream: true }).path).toBe("/messages");
    expect(protocols.gemini.buildUpstreamRequest(base(), "gemini-2.5-flash", { stream: false }).path).toBe(
      "/models/gemini-2.5-flash:generateContent",
    );
    expect(protocols.gemini.buildUpstreamRequest(base(), "gemini-2.5-flash", { stream: true }).path).toBe(
      "/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
  });
  it("always asks an OpenAI upstream for stream usage", () => {
    const body = protocols.openai.buildUpstreamRequest(base({ stream: true }), "gpt", { stream: true }).body;
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
  });
  it("never writes stream_options for an upstream that streams its usage unasked and refuses the field (Mistral)", () => {
    const traits = { streamUsageUnasked: true };
    const built = protocols.openai.buildUpstreamRequest(base({ stream: true }), "mistral-large", {
      stream: true,
      ...traits,
    }).body;
    expect(built.stream).toBe(true);
    expect(built).not.toHaveProperty("stream_options");

    // OpenAI client to that upstream (passthrough): the client's stream_options is dropped, whatever it asked…
    const pt = protocols.openai.passthrough!;
    const send = (body: Record<string, unknown>, upstreamModel: string, upstream?: UpstreamTraits) => {
      const raw = Buffer.from(JSON.stringify(body));
      const out = pt.body(raw, body, pt.head(body), upstreamModel, upstream);
      return { out, same: out === raw, json: JSON.parse(out.toString()) as Record<string, unknown> };
    };
    const messages = [{ role: "user", content: "hi" }];
    for (const options of [{ include_usage: true }, { include_usage: false }, {}]) {
      for (const upstreamModel of ["m", "mistral-large"]) {
        const r = send({ model: "m", stream: true, stream_options: options, messages }, upstreamModel, traits);
        expect(r.json).toEqual({ model: upstreamModel, stream: true, messages });
      }
    }
    // …a non-streamed body's too (the API refuses the field, streamed or not);
    expect(send({ model: "m", stream_options: { include_usage: true }, messages }, "m", traits).json).toEqual({
      model: "m",
      messages,
    });
    // without it and with the same model name, the client's bytes go as they are (no re-serialisation);
    expect(send({ model: "m", stream: true, messages }, "m", traits).same).toBe(true);
    expect(send({ model: "m", messages }, "m", traits).same).toBe(true);
    // any other upstream is asked for the usage chunk, as before.
    expect(send({ model: "m", stream: true, messages }, "m").json.stream_options).toEqual({ include_usage: true });
    expect(send({ model: "m", stream: true, stream_options: { include_usage: true }, messages }, "m", {}).same).toBe(
      true,
    );
  });
});

describe("max tokens and reasoning", () => {
  it("defaults Anthropic's required max_tokens", () => {
    expect(DEFAULT_ANTHROPIC_MAX_TOKENS).toBe(4096);
    expect(protocols.anthropic.buildUpstreamRequest(base(), "c", { stream: false }).body.max_tokens).toBe(4096);
  });
  it("maps reasoning effort to budgets", () => {
    expect(REASONING_BUDGET).toEqual({ minimal: 1024, low: 1024, medium: 8192, high: 24576 });
    const req = base({ reasoning: { enabled: true, effort: "low" } });
    expect(protocols.anthropic.buildUpstreamRequest(req, "c", { stream: false }).body).toMatchObject({
      max_tokens: 1024 + 4096,
      thinking: { type: "enabled", budget_tokens: 1024 },
    });
    expect(protocols.gemini.buildUpstreamRequest(req, "g", { stream: false }).body.generationConfig).toEqual({
      thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
    });
    const fromBudget = base({ reasoning: { enabled: true, budgetTokens: 10000 } });
    expect(protocols.openai.buildUpstreamRequest(fromBudget, "o", { stream: false }).body.reasoning_effort).toBe(
      "high",
    );
  });
  it("keeps the thinking budget below an explicit max_tokens", () => {
    const req = base({ maxOutputTokens: 5000, reasoning: { enabled: true, effort: "medium" } });
    expect(protocols.anthropic.buildUpstreamRequest(req, "c", { stream: false }).body).toMatchObject({
      max_tokens: 5000,
      thinking: { type: "enabled", budget_tokens: 4999 },
    });
    const tooSmall = base({ maxOutputTokens: 500, reasoning: { enabled: true, effort: "low" } });
    expect(
      gatewayError(() => protocols.anthropic.buildUpstreamRequest(tooSmall, "c", { stream: false })),
    ).toMatchObject({
      kind: "invalid_request",
      param: "max_tokens",
    });
  });
  it("disables Gemini thinking with a zero budget", () => {
    const req = base({ reasoning: { enabled: false } });
    expect(protocols.gemini.buildUpstreamRequest(req, "g", { stream: false }).body.generationConfig).toEqual({
      thinkingConfig: { thinkingBudget: 0 },
    });
    expect(protocols.anthropic.buildUpstreamRequest(req, "c", { stream: false }).body.thinking).toEqual({
      type: "disabled",
    });
  });
});

// Issue 26 replaced "refuse, never drop" with translation by kind (translation.ts): what changes the answer's
// contract is still refused; hints are dropped and named, hosted tools go native or are removed and named.
describe("parameters an upstream cannot honour: refused when they change the answer, else dropped and named", () => {
  it("refuses n > 1 everywhere", () => {
    for (const p of ["openai", "anthropic", "gemini"] as const) {
      expect(
        gatewayError(() => protocols[p].buildUpstreamRequest(base({ n: 2 }), "x", { stream: false })),
      ).toMatchObject({
        kind: "invalid_request",
        code: "unsupported_parameter",
        param: "n",
      });
    }
  });
  it("translates JSON output without a schema: toward Anthropic a forced tool whose input is the object, for Gemini a MIME type", () => {
    // Was a 400 toward Anthropic ("structured outputs need a schema"); a schema-less object is now guaranteed by
    // forcing a tool whose input schema is {"type":"object"}, and its input comes back as the answer's text.
    const req = base({ responseFormat: { type: "json_object" } });
    const up = protocols.anthropic.buildUpstreamRequest(req, "c", { stream: false }).body;
    expect(up.tools).toEqual([
      expect.objectContaining({ name: "modelgate_json_answer", input_schema: { type: "object" } }),
    ]);
    expect(up.tool_choice).toEqual({ type: "tool", name: "modelgate_json_answer" });
    expect(up.output_config).toBeUndefined();
    const answer = protocols.anthropic.parseUpstreamResponse({
      id: "msg_1",
      model: "c",
      content: [{ type: "tool_use", id: "toolu_1", name: "modelgate_json_answer", input: { city: "Oslo" } }],
      stop_reason: "tool_use",
      usage: { input_tokens: 5, output_tokens: 3 },
    });
    expect(answer.content).toEqual([{ type: "text", text: '{"city":"Oslo"}' }]);
    expect(answer.finishReason).toBe("stop");
    const decoder = protocols.anthropic.createUpstreamStreamDecoder();
    const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const events = decoder.push(
      sse("message_start", { type: "message_start", message: { id: "m", model: "c", usage: { input_tokens: 5 } } }) +
        sse("content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: "t", name: "modelgate_json_answer", input: {} },
        }) +
        sse("content_block_delta", {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: '{"city":' },
        }) +
        sse("content_block_delta", {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: '"Oslo"}' },
        }) +
        sse("message_delta", {
          type: "message_delta",
          delta: { stop_reason: "tool_use" },
          usage: { output_tokens: 3 },
        }) +
        sse("message_stop", { type: "message_stop" }),
    );
    expect(
      events
        .filter((e) => e.type === "text")
        .map((e) => (e as { text: string }).text)
        .join(""),
    ).toBe('{"city":"Oslo"}');
    expect(events.some((e) => e.type === "tool_call_start")).toBe(false);
    expect(events.find((e) => e.type === "finish")).toMatchObject({ reason: "stop" });
    expect(protocols.gemini.buildUpstreamRequest(req, "g", { stream: false }).body.generationConfig).toEqual({
      responseMimeType: "application/json",
    });
  });
  it("translates a JSON schema between OpenAI response_format, Anthropic output_config.format and Gemini responseJsonSchema", () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    };
    const fromOpenAI = protocols.openai.parseClientRequest({
      model: "m",
      messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_schema", json_schema: { name: "city", strict: true, schema } },
    });
    expect(protocols.anthropic.buildUpstreamRequest(fromOpenAI, "c", { stream: false }).body.output_config).toEqual({
      format: { type: "json_schema", schema },
    });
    const fromAnthropic = protocols.anthropic.parseClientRequest({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "x" }],
      output_config: { format: { type: "json_schema", schema } },
    });
    expect(fromAnthropic.responseFormat).toEqual({ type: "json_schema", name: "response", schema });
    expect(protocols.openai.buildUpstreamRequest(fromAnthropic, "o", { stream: false }).body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "response", schema },
    });
    expect(protocols.gemini.buildUpstreamRequest(fromAnthropic, "g", { stream: false }).body.generationConfig).toEqual({
      responseMimeType: "application/json",
      responseJsonSchema: schema,
      maxOutputTokens: 10,
    });
    // The structured-outputs beta's spelling reads the same.
    const beta = protocols.anthropic.parseClientRequest({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "x" }],
      output_format: { type: "json_schema", schema },
    });
    expect(beta.responseFormat).toEqual(fromAnthropic.responseFormat);
    const fromGemini = protocols.gemini.parseClientRequest(
      {
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        generationConfig: { responseMimeType: "application/json", responseJsonSchema: schema },
      },
      { model: "m" },
    );
    expect(protocols.anthropic.buildUpstreamRequest(fromGemini, "c", { stream: false }).body.output_config).toEqual({
      format: { type: "json_schema", schema },
    });
  });
  it("refuses, in a translation, a client parameter that changes the answer and only its own protocol carries", () => {
    const openai = (extra: Record<string, unknown>) =>
      protocols.openai.parseClientRequest({ model: "m", messages: [{ role: "user", content: "x" }], ...extra });
    // web_search_options was refused too; a hosted tool is now removed and named (see the test below).
    for (const [extra, param] of [
      [{ logit_bias: { "50256": -100 } }, "logit_bias"],
      [{ verbosity: "low" }, "verbosity"],
      [{ service_tier: "flex" }, "service_tier"],
      [{ modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }, "modalities"],
    ] as const) {
      for (const up of ["anthropic", "gemini"] as const) {
        expect(
          gatewayError(() => protocols[up].buildUpstreamRequest(openai(extra), "u", { stream: false })),
        ).toMatchObject({ code: "unsupported_parameter", param });
      }
    }
    // The defaults change nothing and are dropped.
    const defaults = openai({
      logit_bias: {},
      verbosity: "medium",
      service_tier: "auto",
      modalities: ["text"],
      store: true,
      metadata: { a: "b" },
    });
    expect(defaults.untranslatable).toBeUndefined();
    // store and metadata have no Anthropic equivalent: dropped, and named.
    expect(protocols.anthropic.buildUpstreamRequest(defaults, "c", { stream: false }).dropped).toEqual([
      "store",
      "metadata",
    ]);

    // Was refused (mcp_servers first): an MCP connector is a hosted tool, removed and named; output_config.effort
    // is now translated (reasoning_effort) and service_tier is a hint, named.
    const anthropic = protocols.anthropic.parseClientRequest({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "x" }],
      mcp_servers: [{ type: "url", url: "https://mcp.example", name: "x" }],
      output_config: { effort: "low" },
      service_tier: "auto",
    });
    expect(anthropic.untranslatable).toEqual(["mcp_servers", "service_tier"]);
    const toOpenAI = protocols.openai.buildUpstreamRequest(anthropic, "o", { stream: false });
    expect(toOpenAI.dropped).toEqual(["mcp_servers", "service_tier"]);
    expect(toOpenAI.body.reasoning_effort).toBe("low");
    expect(toOpenAI.body.mcp_servers).toBeUndefined();
    // …except toward a model configured without reasoning, where the effort hint is dropped and named.
    expect(protocols.openai.buildUpstreamRequest(anthropic, "o", { stream: false, reasoning: false }).dropped).toEqual([
      "mcp_servers",
      "service_tier",
      "output_config.effort",
    ]);
    // A strict model refuses what would be dropped.
    expect(
      gatewayError(() => protocols.openai.buildUpstreamRequest(anthropic, "o", { stream: false, strict: true })),
    ).toMatchObject({ code: "unsupported_parameter", param: "mcp_servers" });

    const gemini = protocols.gemini.parseClientRequest(
      {
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        cachedContent: "cachedContents/abc",
        generationConfig: { responseModalities: ["TEXT"] },
      },
      { model: "m" },
    );
    expect(gemini.untranslatable).toEqual(["cachedContent"]);
    const err = gatewayError(() => protocols.openai.buildUpstreamRequest(gemini, "o", { stream: false }));
    expect(err).toMatchObject({ code: "unsupported_parameter", param: "cachedContent" });
    expect(err.message).toBe(
      "'cachedContent' is not supported by this model's OpenAI upstream: the cached content is Google's; only an upstream of the client's own protocol can honour it.",
    );
  });
  it("names the refused parameter as a Gemini client knows it", () => {
    let err: unknown;
    try {
      protocols.anthropic.buildUpstreamRequest(base({ n: 2 }), "c", { stream: false });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    const rendered = JSON.parse(protocols.gemini.renderError(err as GatewayError, "r1").body) as {
      error: { message: string };
    };
    expect(rendered.error.message).toBe(
      "'generationConfig.candidateCount' is not supported by this model's Anthropic upstream: only one choice can be translated; only an upstream of the client's own protocol can honour it. (request id: r1)",
    );
  });
  it("drops and names top_k toward OpenAI (was refused), refuses temperature above 1 on Anthropic", () => {
    // A sampling hint: the Gemini CLI always sends generationConfig.topK 64, and every call was a 400.
    const fromGemini = protocols.gemini.parseClientRequest(
      { contents: [{ role: "user", parts: [{ text: "x" }] }], generationConfig: { topK: 64 } },
      { model: "m" },
    );
    const up = protocols.openai.buildUpstreamRequest(fromGemini, "o", { stream: false });
    expect(up.dropped).toEqual(["generationConfig.topK"]);
    expect(up.body.top_k).toBeUndefined();
    expect(protocols.anthropic.buildUpstreamRequest(fromGemini, "c", { stream: false }).body.top_k).toBe(64);
    expect(
      gatewayError(() => protocols.anthropic.buildUpstreamRequest(base({ temperature: 1.5 }), "c", { stream: false }))
        .param,
    ).toBe("temperature");
  });
});

describe("client validation", () => {
  it("names the missing or invalid parameter", () => {
    expect(
      gatewayError(() => protocols.openai.parseClientRequest({ messages: [{ role: "user", content: "x" }] })),
    ).toEqual({
      kind: "invalid_request",
      code: "missing_required_parameter",
      param: "model",
      message: "Missing required parameter: 'model'.",
    });
    expect(
      gatewayError(() =>
        protocols.openai.parseClientRequest({ model: "m", messages: [{ role: "user", content: "x" }], temperature: 3 }),
      ),
    ).toMatchObject({
      code: "invalid_value",
      param: "temperature",
    });
    expect(
      gatewayError(() =>
        protocols.openai.parseClientRequest({
          model: "m",
          messages: [{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }],
        }),
      ),
    ).toMatchObject({ param: "messages[0].content[0].type" });
    expect(
      gatewayError(() =>
        protocols.anthropic.parseClientRequest({ model: "m", messages: [{ role: "user", content: "x" }] }),
      ),
    ).toMatchObject({
      code: "missing_required_parameter",
      param: "max_tokens",
    });
    expect(
      gatewayError(() => protocols.gemini.parseClientRequest({ contents: [{ parts: [{ text: "x" }] }] })),
    ).toMatchObject({ param: "model" });
    expect(gatewayError(() => protocols.openai.parseClientRequest("not an object"))).toMatchObject({
      code: "invalid_json",
    });
  });
  it("refuses a Gemini functionResponse that answers no call", () => {
    const body = { contents: [{ role: "user", parts: [{ functionResponse: { name: "f", response: {} } }] }] };
    expect(gatewayError(() => protocols.gemini.parseClientRequest(body, { model: "g" }))).toMatchObject({
      param: "contents[0].parts[0].functionResponse",
    });
  });
  it("reads stream and include_usage from an OpenAI body, and the model and stream from a Gemini route", () => {
    const o = protocols.openai.parseClientRequest({
      model: "m",
      messages: [{ role: "user", content: "x" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect([o.stream, o.streamIncludeUsage]).toEqual([true, true]);
    const g = protocols.gemini.parseClientRequest(
      { contents: [{ parts: [{ text: "x" }] }] },
      { model: "models/gemini-x", stream: true },
    );
    expect([g.model, g.stream]).toEqual(["gemini-x", true]);
  });
});

describe("errors", () => {
  const err = new GatewayError("rate_limit", "rate_limit_exceeded", "Slow down.");
  it("renders each protocol's shape with the request id", () => {
    expect(JSON.parse(protocols.openai.renderError(err, "r1").body)).toEqual({
      error: {
        message: "Slow down. (request id: r1)",
        type: "rate_limit_error",
        param: null,
        code: "rate_limit_exceeded",
      },
    });
    expect(JSON.parse(protocols.anthropic.renderError(err, "r1").body)).toEqual({
      type: "error",
      error: { type: "rate_limit_error", message: "Slow down. (request id: r1)" },
      request_id: "r1",
    });
    expect(
      protocols.gemini.renderError(new GatewayError("authentication", "invalid_api_key", "Bad key."), "r1"),
    ).toEqual({
      status: 401,
      body: JSON.stringify({ error: { code: 401, message: "Bad key. (request id: r1)", status: "UNAUTHENTICATED" } }),
    });
  });
  it("parses each vendor's upstream error body", () => {
    expect(
      protocols.openai.parseUpstreamError(
        429,
        JSON.stringify({
          error: { message: "Quota", type: "insufficient_quota", param: null, code: "insufficient_quota" },
        }),
      ),
    ).toEqual({ kind: "rate_limit", code: "insufficient_quota", message: "Quota", param: null });
    expect(
      protocols.anthropic.parseUpstreamError(
        529,
        JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
      ),
    ).toEqual({
      kind: "unavailable",
      code: "overloaded_error",
      message: "Overloaded",
      param: null,
    });
    const badKey = {
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }],
      },
    };
    expect(protocols.gemini.parseUpstreamError(400, JSON.stringify(badKey))).toEqual({
      kind: "authentication",
      code: "INVALID_ARGUMENT",
      message: "API key not valid. Please pass a valid API key.",
      param: null,
    });
    expect(protocols.openai.parseUpstreamError(502, "<html>Bad Gateway</html>")).toEqual({
      kind: "upstream",
      code: "http_502",
      message: "<html>Bad Gateway</html>",
      param: null,
    });
  });
});

describe("stream framing", () => {
  const ctx = { model: "acme", requestId: "r1" };
  it("gives an OpenAI client no usage chunk unless asked", () => {
    const enc = protocols.openai.createClientStreamEncoder(ctx);
    const out = [
      enc.encode({ type: "start", id: "x", model: "u", created: 1 }),
      enc.encode({
        type: "usage",
        usage: { promptTokens: 1, completionTokens: 2, reasoningTokens: 0, cachedTokens: 0 },
      }),
      enc.encode({ type: "finish", reason: "stop" }),
      enc.encode({ type: "end" }),
    ].join("");
    expect(out).toBe(
      'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"acme","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n' +
        'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"acme","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}\n\n' +
        "data: [DONE]\n\n",
    );
  });
  it("starts an Anthropic stream with message_start whatever comes first", () => {
    const enc = protocols.anthropic.createClientStreamEncoder(ctx);
    expect(enc.encode({ type: "text", text: "a" }).split("\n")[0]).toBe("event: message_start");
    expect(enc.encode({ type: "end" })).toContain("event: message_stop\n");
  });
  it("reports a truncated upstream stream as an error", () => {
    for (const p of ["openai", "anthropic", "gemini"] as const) {
      const events = protocols[p].createUpstreamStreamDecoder().end();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: "error", error: { kind: "upstream", code: "stream_truncated" } });
    }
  });
});
