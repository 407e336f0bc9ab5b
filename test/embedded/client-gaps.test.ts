import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { ChatOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";
import { compat } from "../helpers/compat.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";

// The smaller gaps real clients found (issue 14, section 4), driven with the official SDKs through the mock
// upstreams: the request-id headers each SDK reads, upstream base URLs written bare or versioned, an upstream
// 404 on a path reported as the operator's configuration error.

type Proto = "openai" | "anthropic" | "gemini";
const PROTOS: Proto[] = ["openai", "anthropic", "gemini"];
const VERSION: Record<Proto, string> = { openai: "/v1", anthropic: "/v1", gemini: "/v1beta" };

let mocks: Record<Proto, MockUpstream>;
let gw: Gateway;
let base: string;
let apiKey: string;

/** gap-<p>: the upstream's base URL is the bare host; ver-<p>: the versioned form; broken-<p>: a wrong path. */
const model = (kind: "gap" | "ver" | "broken", p: Proto) => `${kind}-${p}-2025-01-01`;

beforeAll(async () => {
  const [o, a, g] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, anthropic: a, gemini: g };
  const origin = (p: Proto) => mocks[p].url.slice(0, -VERSION[p].length);
  const upstreams = PROTOS.flatMap((p) => [
    { name: `bare-${p}`, protocol: p, baseUrl: origin(p), apiKey: "${MOCK_UPSTREAM_KEY}" },
    { name: `versioned-${p}`, protocol: p, baseUrl: `${mocks[p].url}/`, apiKey: "${MOCK_UPSTREAM_KEY}" },
    { name: `broken-${p}`, protocol: p, baseUrl: `${origin(p)}/wrong/prefix`, apiKey: "${MOCK_UPSTREAM_KEY}" },
  ]);
  const models = PROTOS.flatMap((p) => [
    { id: model("gap", p), price: { input: 1, output: 2 }, routes: [{ upstream: `bare-${p}`, model: `up-${p}` }] },
    { id: model("ver", p), price: { input: 1, output: 2 }, routes: [{ upstream: `versioned-${p}`, model: `up-${p}` }] },
    { id: model("broken", p), price: { input: 1, output: 2 }, routes: [{ upstream: `broken-${p}`, model: `up-${p}` }] },
  ]);
  gw = await startGateway("embedded", { config: { upstreams, models }, env: { MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY } });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "gaps", balance: "100" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "gaps", name: "gaps" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(PROTOS.map((p) => mocks?.[p]?.close()));
});

const openai = () => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const gemini = () => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });

/** The error a call must fail with (a call that succeeds fails the test). */
async function failure<E>(call: Promise<unknown>): Promise<E> {
  const outcome = await call.then(
    () => ({ ok: true as const }),
    (e: unknown) => ({ ok: false as const, e }),
  );
  if (outcome.ok) throw new Error("expected the call to fail");
  return outcome.e as E;
}

describe("request-id headers the SDKs read", () => {
  it("gives the openai SDK its _request_id, on answers and on errors, equal to X-Gateway-Request-Id", async () => {
    const { request_id, response } = await openai()
      .chat.completions.create({ model: model("gap", "anthropic"), messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    expect(request_id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(request_id).toBe(response.headers.get("x-gateway-request-id"));
    const plain = await openai().chat.completions.create({
      model: model("gap", "openai"),
      messages: [{ role: "user", content: "hi" }],
    });
    expect(plain._request_id).toMatch(/^req_[0-9a-f]{24}$/);
    const err = await failure<InstanceType<typeof OpenAI.APIError>>(
      openai().chat.completions.create({
        model: "no-such-model-2000-01-01",
        messages: [{ role: "user", content: "hi" }],
      }),
    );
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.requestID).toMatch(/^req_[0-9a-f]{24}$/);
    expect(err.requestID).toBe(err.headers?.get("x-gateway-request-id"));
    expect(err.message).toContain(`request id: ${err.requestID}`);
  });

  it("gives the Anthropic SDK its _request_id and err.requestID, streaming or not", async () => {
    const msg = await anthropic()
      .messages.create({ model: model("gap", "openai"), max_tokens: 100, messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    expect(msg.request_id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(msg.request_id).toBe(msg.response.headers.get("x-gateway-request-id"));
    const plain = await anthropic().messages.create({
      model: model("gap", "gemini"),
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(plain._request_id).toMatch(/^req_[0-9a-f]{24}$/);
    // Passthrough (the upstream's own request-id header must not win over the gateway's).
    mocks.anthropic.reply({ text: ["pass"] });
    const stream = anthropic().messages.stream({
      model: model("gap", "anthropic"),
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    await stream.finalMessage();
    const { response } = await stream.withResponse();
    expect(response.headers.get("request-id")).toBe(response.headers.get("x-gateway-request-id"));
    const err = await failure<InstanceType<typeof Anthropic.APIError>>(
      anthropic().messages.create({
        model: "no-such-model-2000-01-01",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.requestID).toMatch(/^req_[0-9a-f]{24}$/);
    expect(err.requestID).toBe(err.headers?.get("x-gateway-request-id"));
    expect(err.message).toContain(`request id: ${err.requestID}`);
  });

  it("sends the same three headers on the unknown-path 404 and the model list", async () => {
    for (const res of [
      await fetch(`${base}/v1/nothing-here`),
      await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } }),
    ]) {
      const id = res.headers.get("x-gateway-request-id");
      expect(id).toMatch(/^req_[0-9a-f]{24}$/);
      expect(res.headers.get("x-request-id")).toBe(id);
      expect(res.headers.get("request-id")).toBe(id);
      await res.body?.cancel();
    }
  });
});

describe("upstream base URLs", () => {
  it("reaches every upstream protocol through a bare-host base URL and a versioned one, from every client", async () => {
    for (const p of PROTOS) {
      for (const kind of ["gap", "ver"] as const) {
        const id = model(kind, p);
        mocks[p].reply({ text: ["from ", p] }, { text: ["from ", p] }, { text: ["from ", p] });
        const o = await openai().chat.completions.create({ model: id, messages: [{ role: "user", content: "hi" }] });
        expect(o.choices[0]!.message.content).toBe(`from ${p}`);
        const a = await anthropic().messages.create({
          model: id,
          max_tokens: 50,
          messages: [{ role: "user", content: "hi" }],
        });
        expect(a.content).toEqual([{ type: "text", text: `from ${p}` }]);
        const g = await gemini().models.generateContent({ model: id, contents: "hi" });
        expect(g.text).toBe(`from ${p}`);
        expect(mocks[p].requests.at(-1)!.url.startsWith(`${VERSION[p]}/`)).toBe(true);
      }
    }
  });

  it("reports an upstream 404 on a path as the operator's configuration error, and logs it", async () => {
    for (const p of PROTOS) {
      const err = await failure<InstanceType<typeof OpenAI.APIError>>(
        openai().chat.completions.create({ model: model("broken", p), messages: [{ role: "user", content: "hi" }] }),
      );
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect({ status: err.status, code: err.code }).toEqual({ status: 502, code: "upstream_misconfigured" });
      // The customer learns neither the upstream's name nor its address.
      expect(err.message).not.toContain("broken-");
      expect(err.message).not.toContain("127.0.0.1");
    }
    // The log line is written before the answer, but reaches the test through the process's stdout pipe.
    const log = await eventually(
      async () => gw.procs[0]!.output(),
      (out) => out.includes('"upstream":"broken-gemini"'),
    );
    expect(log).toContain("check this upstream's baseUrl and protocol");
  });

  it("still reports an upstream that does not know the model as upstream_model_not_found", async () => {
    mocks.anthropic.reply({ error: { status: 404, message: "model: up-anthropic", type: "not_found_error" } });
    mocks.gemini.reply({
      error: {
        status: 404,
        message: "models/up-gemini is not found for API version v1beta, or is not supported for generateContent.",
      },
    });
    for (const p of ["anthropic", "gemini"] as const) {
      const err = await failure<InstanceType<typeof OpenAI.APIError>>(
        openai().chat.completions.create({ model: model("gap", p), messages: [{ role: "user", content: "hi" }] }),
      );
      expect({ status: err.status, code: err.code }).toEqual({ status: 502, code: "upstream_model_not_found" });
    }
  });
});

const CITY_SCHEMA = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
};
const lastBody = (p: Proto) => mocks[p].requests.at(-1)!.body as Record<string, unknown>;

describe("structured outputs and parameters a translation cannot carry", () => {
  it("passes Anthropic's output_config.format, and fields the gateway does not know, to an Anthropic upstream", async () => {
    mocks.anthropic.reply({ text: ['{"city":"Paris"}'] });
    const res = await fetch(`${base}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({
        model: model("gap", "anthropic"),
        max_tokens: 100,
        messages: [{ role: "user", content: "A city?" }],
        output_config: { format: { type: "json_schema", schema: CITY_SCHEMA } },
        some_future_field: { keep: true },
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe(model("gap", "anthropic"));
    expect(lastBody("anthropic")).toMatchObject({
      model: "up-anthropic",
      output_config: { format: { type: "json_schema", schema: CITY_SCHEMA } },
      some_future_field: { keep: true },
    });
  });

  it(`translates output_config.format to OpenAI's response_format and Gemini's responseJsonSchema, with the Anthropic SDK ${compat("anthropic-sdk", "openai", "structured")} ${compat("anthropic-sdk", "gemini", "structured")}`, async () => {
    for (const p of ["openai", "gemini"] as const) {
      mocks[p].reply({ text: ['{"city":"Paris"}'] });
      const msg = await anthropic().messages.create({
        model: model("gap", p),
        max_tokens: 100,
        messages: [{ role: "user", content: "A city?" }],
        output_config: { format: { type: "json_schema", schema: CITY_SCHEMA } },
      });
      expect(JSON.parse((msg.content[0] as { text: string }).text)).toEqual({ city: "Paris" });
    }
    expect(mocks.openai.requests.at(-1)!.body).toMatchObject({
      response_format: { type: "json_schema", json_schema: { name: "response", schema: CITY_SCHEMA } },
    });
    expect(mocks.gemini.requests.at(-1)!.body).toMatchObject({
      generationConfig: { responseMimeType: "application/json", responseJsonSchema: CITY_SCHEMA },
    });
  });

  it(`translates OpenAI's response_format and Gemini's responseJsonSchema into output_config.format toward Anthropic ${compat("openai-sdk", "anthropic", "structured")} ${compat("genai-sdk", "anthropic", "structured")}`, async () => {
    mocks.anthropic.reply({ text: ['{"city":"Oslo"}'] }, { text: ['{"city":"Rome"}'] });
    const o = await openai().chat.completions.create({
      model: model("gap", "anthropic"),
      messages: [{ role: "user", content: "A city?" }],
      response_format: { type: "json_schema", json_schema: { name: "city", strict: true, schema: CITY_SCHEMA } },
    });
    expect(JSON.parse(o.choices[0]!.message.content!)).toEqual({ city: "Oslo" });
    expect(lastBody("anthropic").output_config).toEqual({ format: { type: "json_schema", schema: CITY_SCHEMA } });
    const g = await gemini().models.generateContent({
      model: model("gap", "anthropic"),
      contents: "A city?",
      config: { responseMimeType: "application/json", responseJsonSchema: CITY_SCHEMA },
    });
    expect(JSON.parse(g.text!)).toEqual({ city: "Rome" });
    expect(lastBody("anthropic").output_config).toEqual({ format: { type: "json_schema", schema: CITY_SCHEMA } });
    // JSON without a schema (issue 26: was a 400 naming response_format): Anthropic's structured outputs take no
    // schema-less object, so the answer is forced through a tool whose input is the object, and comes back as
    // the message's JSON text, streamed or not.
    mocks.anthropic.reply(
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Paris" } }] },
      { toolCalls: [{ name: "modelgate_json_answer", arguments: { city: "Bern" } }] },
    );
    const j = await openai().chat.completions.create({
      model: model("gap", "anthropic"),
      messages: [{ role: "user", content: "A city as JSON?" }],
      response_format: { type: "json_object" },
    });
    expect(JSON.parse(j.choices[0]!.message.content!)).toEqual({ city: "Paris" });
    expect(j.choices[0]!.finish_reason).toBe("stop");
    expect(j.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(lastBody("anthropic").tool_choice).toEqual({ type: "tool", name: "modelgate_json_answer" });
    const stream = await openai().chat.completions.create({
      model: model("gap", "anthropic"),
      messages: [{ role: "user", content: "A city as JSON?" }],
      response_format: { type: "json_object" },
      stream: true,
    });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(JSON.parse(text)).toEqual({ city: "Bern" });
    expect(finish).toBe("stop");
  });

  it(`gives LangChain's withStructuredOutput (json_schema) its object from an Anthropic upstream ${compat("langchain", "anthropic", "structured")}`, async () => {
    mocks.anthropic.reply({ text: ['{"city":', '"Lisbon"}'] });
    const chat = new ChatOpenAI({
      model: model("gap", "anthropic"),
      apiKey,
      configuration: { baseURL: `${base}/v1` },
      maxRetries: 0,
    });
    const structured = chat.withStructuredOutput(
      { title: "city", ...CITY_SCHEMA },
      { method: "jsonSchema", strict: true },
    );
    expect(await structured.invoke("A city?")).toEqual({ city: "Lisbon" });
    expect(lastBody("anthropic").output_config).toEqual({
      format: { type: "json_schema", schema: expect.objectContaining({ properties: CITY_SCHEMA.properties }) },
    });
  });

  it("refuses in a translation what changes the answer (logit_bias, verbosity, service_tier), and passes it to the client's own protocol", async () => {
    const calls = { anthropic: mocks.anthropic.requests.length, gemini: mocks.gemini.requests.length };
    for (const [extra, param] of [
      [{ logit_bias: { "9891": 100 } }, "logit_bias"],
      [{ verbosity: "low" }, "verbosity"],
      [{ service_tier: "priority" }, "service_tier"],
    ] as const) {
      for (const p of ["anthropic", "gemini"] as const) {
        const err = await failure<InstanceType<typeof OpenAI.APIError>>(
          openai().chat.completions.create({
            model: model("gap", p),
            messages: [{ role: "user", content: "x" }],
            ...extra,
          }),
        );
        expect({ status: err.status, code: err.code, param: err.param }).toEqual({
          status: 400,
          code: "unsupported_parameter",
          param,
        });
        expect(err.message).toContain(`'${param}'`);
      }
    }
    expect({ anthropic: mocks.anthropic.requests.length, gemini: mocks.gemini.requests.length }).toEqual(calls);
    await openai().chat.completions.create({
      model: model("gap", "openai"),
      messages: [{ role: "user", content: "x" }],
      logit_bias: { "9891": 100 },
      verbosity: "low",
      service_tier: "priority",
    });
    expect(lastBody("openai")).toMatchObject({
      model: "up-openai",
      logit_bias: { "9891": 100 },
      verbosity: "low",
      service_tier: "priority",
    });
    // Their defaults change nothing: translated without them.
    mocks.anthropic.reply({ text: ["fine"] });
    const ok = await openai().chat.completions.create({
      model: model("gap", "anthropic"),
      messages: [{ role: "user", content: "x" }],
      verbosity: "medium",
      service_tier: "auto",
      store: false,
    });
    expect(ok.choices[0]!.message.content).toBe("fine");
  });
});

describe("Anthropic stream usage", () => {
  /** The raw events and the SDK's accumulated message for one streamed call. */
  async function streamed(id: string) {
    const stream = anthropic().messages.stream({
      model: id,
      max_tokens: 2000,
      messages: [{ role: "user", content: "hi" }],
    });
    const events: Anthropic.MessageStreamEvent[] = [];
    // Copied as they arrive: the SDK builds its final message by mutating message_start's object.
    for await (const ev of stream) events.push(structuredClone(ev));
    return { events, final: await stream.finalMessage() };
  }
  const start = (events: Anthropic.MessageStreamEvent[]) => (events[0] as Anthropic.RawMessageStartEvent).message.usage;
  const delta = (events: Anthropic.MessageStreamEvent[]) =>
    (events.find((e) => e.type === "message_delta") as Anthropic.RawMessageDeltaEvent).usage;

  it("behind an OpenAI upstream: no output in message_start, the exact input and output in message_delta", async () => {
    mocks.openai.reply({ text: ["one ", "two ", "three"], usage: { promptTokens: 321, completionTokens: 7 } });
    const { events, final } = await streamed(model("gap", "openai"));
    expect(events[0]!.type).toBe("message_start");
    expect(start(events).output_tokens).toBe(0);
    expect(delta(events)).toMatchObject({ input_tokens: 321, output_tokens: 7 });
    expect(final.usage).toMatchObject({ input_tokens: 321, output_tokens: 7 });
  });

  it("behind a Gemini reasoning upstream: exact input but no running output count in message_start, the total once in message_delta", async () => {
    mocks.gemini.reply({
      thinking: ["hmm"],
      text: ["a", "b", "c"],
      usage: { promptTokens: 55, completionTokens: 30, reasoningTokens: 4096 },
    });
    const { events, final } = await streamed(model("gap", "gemini"));
    expect(start(events)).toMatchObject({ input_tokens: 55, output_tokens: 0 });
    expect(delta(events)).toMatchObject({ input_tokens: 55, output_tokens: 30 + 4096 });
    expect(final.usage).toMatchObject({ input_tokens: 55, output_tokens: 4126 });
    // What a client that adds message_start's and message_delta's output (LangChain) reports: the real total.
    expect(start(events).output_tokens + delta(events).output_tokens).toBe(4126);
  });
});
