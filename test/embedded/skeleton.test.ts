import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";
import { admin, eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";

// The walking skeleton in embedded mode: one process (`npm start`), PGlite under a fresh data dir, the
// admin CLI talking to the running server, the official openai SDK as the client, a mock OpenAI upstream.

const MODEL = "gpt-4o-mini-2024-07-18";
let mock: OpenAIMock;
let server: Proc;
let base: string;
const METRICS_TOKEN = "skeleton-metrics-token-0123456789";
const METRICS_AUTH = { authorization: `Bearer ${METRICS_TOKEN}` };
let env: NodeJS.ProcessEnv;
let dataDir: string;
let apiKey: string;

const usageRows = async () =>
  (await admin(env, "usage", "list", "--account", "acme")).json as {
    requestId: string;
    costMicro: string;
    promptTokens: number;
    completionTokens: number;
    status: number;
    model: string;
  }[];
const balanceMicro = async () =>
  BigInt(((await admin(env, "account", "show", "--account", "acme")).json as { balanceMicro: string }).balanceMicro);

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-secret");
  dataDir = mkdtempSync(join(tmpdir(), "mg-embedded-"));
  const config = join(dataDir, "gateway.yaml");
  writeFileSync(
    config,
    `upstreams:
  - name: openai-main
    protocol: openai
    baseUrl: ${mock.url}
    apiKey: \${MOCK_OPENAI_KEY}
models:
  - id: ${MODEL}
    reasoning: false
    price: { input: 0.15, output: 0.60 }
    routes: [{ upstream: openai-main, model: gpt-4o-mini, weight: 1 }]
`,
  );
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    MOCK_OPENAI_KEY: "sk-upstream-secret",
    DATABASE_URL: "",
    REDIS_URL: "",
    MODELGATE_METRICS_TOKEN: METRICS_TOKEN, // /metrics needs it (issue 25)
  };
  server = startTs("control-plane/src/main/embedded.ts", env);
  await waitForHttp(`${base}/readyz`, server, 60_000, METRICS_AUTH);

  expect(
    (await admin(env, "account", "create", "--name", "acme", "--email", "ops@acme.test", "--balance", "10")).json,
  ).toMatchObject({ name: "acme", balance: "10" });
  // A contract price different from the list price, so the debit proves which one applied.
  expect(
    (await admin(env, "contract", "set", "--account", "acme", "--model", MODEL, "--input", "0.2", "--output", "0.8"))
      .code,
  ).toBe(0);
  const created = (await admin(env, "key", "create", "--account", "acme", "--name", "ci")).json as {
    id: string;
    key: string;
  };
  expect(created.key).toMatch(/^sk-/);
  apiKey = created.key;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await mock?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const client = () => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });

describe("embedded mode, OpenAI protocol", () => {
  it("answers a completion with usage, bills it at the contract price and logs it", async () => {
    const before = await balanceMicro();
    mock.queue.push({ content: "Paris is the capital of France.", promptTokens: 1234, completionTokens: 567 });
    const { data, response } = await client()
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Capital of France?" }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe("Paris is the capital of France.");
    expect(data.model).toBe(MODEL);
    expect(data.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801 });
    const requestId = response.headers.get("x-gateway-request-id");
    expect(requestId).toMatch(/^req_[0-9a-f]{24}$/);
    // The upstream saw its own model name and credential, never the client's key.
    const seen = mock.requests.at(-1)!;
    expect(seen.body.model).toBe("gpt-4o-mini");
    expect(seen.headers.authorization).toBe("Bearer sk-upstream-secret");

    // 1234 × 0.2 + 567 × 0.8 per 1M tokens = (246800 + 453600) / 1e6 units = 0.7004 units → 700 micro (half up)
    const rows = await eventually(usageRows, (r) => r.some((x) => x.requestId === requestId));
    const row = rows.find((x) => x.requestId === requestId)!;
    expect(row).toMatchObject({
      model: MODEL,
      promptTokens: 1234,
      completionTokens: 567,
      status: 200,
      costMicro: "700",
    });
    expect(await eventually(balanceMicro, (b) => b === before - 700n)).toBe(before - 700n);
  });

  it("streams chunk by chunk with usage when asked, and bills the streamed call", async () => {
    const before = await balanceMicro();
    mock.queue.push({ content: "one two three four five", promptTokens: 40, completionTokens: 5000 });
    const stream = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "count" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
      expect(chunk.model).toBe(MODEL);
    }
    expect(text).toBe("one two three four five");
    expect(chunks).toBeGreaterThanOrEqual(7); // role + 5 words + finish (+ usage)
    expect(usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 5000, total_tokens: 5040 });
    expect((mock.requests.at(-1)!.body.stream_options as { include_usage: boolean }).include_usage).toBe(true);
    // 40 × 0.2 + 5000 × 0.8 = 8 + 4000 micro-units exactly
    expect(await eventually(balanceMicro, (b) => b === before - 4008n)).toBe(before - 4008n);
  });

  it("answers with the client's model name when the upstream reports a dated one, keeping the upstream's bytes", async () => {
    const content = 'He said "model": "gpt-4o-mini-2024-07-18" twice.';
    mock.queue.push({ content, answerModel: "gpt-4o-mini-2024-07-18", pretty: true });
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    const data = JSON.parse(text) as OpenAI.ChatCompletion;
    expect(data.model).toBe(MODEL);
    expect(data.choices[0]!.message.content).toBe(content);
    expect(text).toContain(`\n  "model": "${MODEL}",\n`); // the upstream's pretty-printing survived

    mock.queue.push({ content: "a b c", answerModel: "gpt-4o-mini-2024-07-18" });
    const stream = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "x" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = "";
    for await (const chunk of stream) {
      expect(chunk.model).toBe(MODEL);
      streamed += chunk.choices[0]?.delta?.content ?? "";
    }
    expect(streamed).toBe("a b c");
  });

  it("adds usage to the upstream request but hides the usage chunk from a client that did not ask", async () => {
    mock.queue.push({ content: "a b", promptTokens: 3, completionTokens: 2 });
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "x" }] }),
    });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const body = await res.text();
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(body).not.toContain('"usage"');
    expect((mock.requests.at(-1)!.body.stream_options as { include_usage: boolean }).include_usage).toBe(true);
    const requestId = res.headers.get("x-gateway-request-id")!;
    const rows = await eventually(usageRows, (r) => r.some((x) => x.requestId === requestId));
    expect(rows.find((x) => x.requestId === requestId)).toMatchObject({ promptTokens: 3, completionTokens: 2 });
  });

  it("counts each call, its duration and its tokens in /metrics", async () => {
    const scrape = async () => {
      const res = await fetch(`${base}/metrics`, { headers: METRICS_AUTH });
      expect(res.status).toBe(200);
      return res.text();
    };
    const value = (text: string, series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    };
    const series = {
      ok: `modelgate_requests_total{protocol="openai",model="${MODEL}",status="200"}`,
      duration: 'modelgate_request_duration_seconds_count{protocol="openai",stream="false"}',
      firstByte: 'modelgate_time_to_first_token_seconds_count{protocol="openai"}',
      prompt: `modelgate_tokens_total{model="${MODEL}",direction="prompt"}`,
      completion: `modelgate_tokens_total{model="${MODEL}",direction="completion"}`,
    };
    const before = await scrape();
    const done = await Promise.all(
      [0, 1].map(() =>
        client().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Count me." }] }),
      ),
    );
    const after = await scrape();
    const delta = (k: keyof typeof series) => value(after, series[k]) - value(before, series[k]);
    expect(delta("ok")).toBe(2);
    expect(delta("duration")).toBe(2);
    expect(delta("firstByte")).toBe(2);
    expect(delta("prompt")).toBe(done.reduce((n, c) => n + c.usage!.prompt_tokens, 0));
    expect(delta("completion")).toBe(done.reduce((n, c) => n + c.usage!.completion_tokens, 0));
    expect(delta("prompt")).toBeGreaterThan(0);
  });

  it("lists the models the key may call", async () => {
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  });
});

describe("embedded mode, refusals", () => {
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", ...headers },
      body,
    });
  const expectOpenAIError = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    const id = res.headers.get("x-gateway-request-id");
    expect(id).toMatch(/^req_/);
    const body = (await res.json()) as { error: { message: string; type: string; code: string; param: string | null } };
    expect(body.error.code).toBe(code);
    expect(typeof body.error.type).toBe("string");
    expect(body.error.message).toContain(`request id: ${id}`);
    return body.error;
  };

  it("refuses a missing, malformed or unknown key with 401, and the SDK sees AuthenticationError", async () => {
    const good = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x" }] });
    await expectOpenAIError(
      await fetch(`${base}/v1/chat/completions`, { method: "POST", body: good }),
      401,
      "missing_api_key",
    );
    await expectOpenAIError(
      await post("/v1/chat/completions", good, { authorization: `Bearer  ${apiKey}` }),
      401,
      "invalid_api_key",
    );
    await expectOpenAIError(
      await post("/v1/chat/completions", good, { authorization: `bearer ${apiKey}` }),
      401,
      "invalid_api_key",
    );
    await expectOpenAIError(
      await post("/v1/chat/completions", good, { authorization: apiKey }),
      401,
      "invalid_api_key",
    );
    await expectOpenAIError(
      await post("/v1/chat/completions", good, { authorization: `Basic ${apiKey}` }),
      401,
      "invalid_api_key",
    );
    await expectOpenAIError(
      await post("/v1/chat/completions", good, {
        authorization: "Bearer sk-mg-notarealkeyatall0000000000000000000000",
      }),
      401,
      "invalid_api_key",
    );
    const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: "sk-wrong-key-value", maxRetries: 0 });
    await expect(
      bad.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("refuses model names that name Object.prototype's properties like any unknown model, in every protocol", async () => {
    // A protocol-fuzz run found /v1beta/models/valueOf:streamGenerateContent answered 500: the catalog was a plain
    // object, and "valueOf" found Object.prototype's function.
    const keyHeaders = { "x-api-key": apiKey, "x-goog-api-key": apiKey, "anthropic-version": "2023-06-01" };
    const gemini = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "x" }] }] });
    for (const name of ["valueOf", "constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const answers = await Promise.all([
        post("/v1/chat/completions", JSON.stringify({ model: name, messages: [{ role: "user", content: "x" }] })),
        post(
          "/v1/messages",
          JSON.stringify({ model: name, max_tokens: 5, messages: [{ role: "user", content: "x" }] }),
          keyHeaders,
        ),
        post(`/v1beta/models/${name}:generateContent`, gemini, keyHeaders),
        post(`/v1beta/models/${name}:streamGenerateContent?alt=sse`, gemini, keyHeaders),
      ]);
      for (const res of answers) {
        const what = `${name}: ${new URL(res.url).pathname} ${res.status}`;
        expect(res.status, what).toBeGreaterThanOrEqual(400);
        expect(res.status, what).toBeLessThan(500);
        expect(await res.text(), what).toContain(`request id: ${res.headers.get("x-gateway-request-id")}`);
      }
    }
  });

  it("answers 404 for a model that is not a full model ID, naming the model list", async () => {
    const err = await expectOpenAIError(
      await post(
        "/v1/chat/completions",
        JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] }),
      ),
      404,
      "model_not_found",
    );
    expect(err.message).toContain("/v1/models");
    expect(err.param).toBe("model");
    await expect(
      client().chat.completions.create({ model: "GPT 4o mini", messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("answers 404 for unknown paths, naming the path, the endpoint probably meant and the endpoints that exist", async () => {
    for (const path of [
      "/v1//chat/completions",
      "/chat/completions",
      "/v1/chat/completions/",
      "/v2/chat/completions",
      "/v1/v1/chat/completions",
    ]) {
      const res = await post(path, "{}");
      const err = await expectOpenAIError(res, 404, "unknown_path");
      expect(err.message).toContain(`'${path}'`);
      expect(err.message).toContain("Did you mean '/v1/chat/completions'?");
      expect(err.message).toContain("POST /v1/messages");
    }
    // A path that resembles no endpoint is not blamed on the base URL: the answer lists what exists.
    const err = await expectOpenAIError(await post("/v1/completions", "{}"), 404, "unknown_path");
    expect(err.message).not.toContain("Did you mean");
    expect(err.message).not.toContain("base URL");
    expect(err.message).toContain("This gateway serves: POST /v1/chat/completions");
  });

  it("refuses what it reads with 400 (413 for size) in OpenAI's shape, and charges nothing", async () => {
    const before = await balanceMicro();
    const newestBefore = (await usageRows())[0]?.requestId;
    const calls = mock.requests.length;
    await expectOpenAIError(await post("/v1/chat/completions", "{not json"), 400, "invalid_json");
    await expectOpenAIError(await post("/v1/chat/completions", "[1,2]"), 400, "invalid_json");
    const noModel = await expectOpenAIError(
      await post("/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "x" }] })),
      400,
      "missing_required_parameter",
    );
    expect(noModel.param).toBe("model");
    expect(
      (
        await expectOpenAIError(
          await post("/v1/chat/completions", JSON.stringify({ model: 42, messages: [] })),
          400,
          "invalid_type",
        )
      ).param,
    ).toBe("model");
    expect(
      (
        await expectOpenAIError(
          await post("/v1/chat/completions", JSON.stringify({ model: MODEL, stream: "yes", messages: [] })),
          400,
          "invalid_type",
        )
      ).param,
    ).toBe("stream");
    await expectOpenAIError(
      await post(
        "/v1/chat/completions",
        JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x".repeat(9 * 1024 * 1024) }] }),
      ),
      413,
      "request_too_large",
    );
    expect(mock.requests.length).toBe(calls); // nothing reached the upstream
    // A served call after the refusals is the barrier: usage is settled in the order calls end, so once its row is
    // in, a row any refusal had left would be too. Newest first: the barrier's row, then the newest from before.
    const { response } = await client()
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "barrier" }] })
      .withResponse();
    const barrier = response.headers.get("x-gateway-request-id");
    const rows = await eventually(usageRows, (r) => r[0]?.requestId === barrier);
    expect(rows[1]?.requestId).toBe(newestBefore);
    expect(await eventually(balanceMicro, (b) => b === before - BigInt(rows[0]!.costMicro))).toBe(
      before - BigInt(rows[0]!.costMicro),
    );
  });

  it("passes what it does not read to a same-protocol upstream, which judges it (passthrough passes)", async () => {
    // The model's route speaks OpenAI, as the client does: roles, fields and shapes the gateway does not read are
    // the upstream's to validate (DESIGN.md, turn 3), so none of these is a gateway 400; each reaches the upstream
    // as the client wrote it.
    const bodies = [
      { model: MODEL },
      { model: MODEL, messages: "hi" },
      { model: MODEL, messages: [{ role: "robot", content: "x" }] },
      { model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: "ten" },
    ];
    for (const b of bodies) {
      const calls = mock.requests.length;
      const res = await post("/v1/chat/completions", JSON.stringify(b));
      await res.arrayBuffer();
      expect(mock.requests.length).toBe(calls + 1);
      expect({ ...mock.requests.at(-1)!.body, model: MODEL }).toEqual(b); // the route renames the model only
    }
  });

  it("puts X-Gateway-Request-Id on every response, health checks included", async () => {
    const res = await fetch(`${base}/v1/models`);
    expect(res.status).toBe(401);
    expect(res.headers.get("x-gateway-request-id")).toMatch(/^req_/);
  });

  it("refuses a revoked key at once", async () => {
    const k = (await admin(env, "key", "create", "--account", "acme", "--name", "short-lived")).json as {
      id: string;
      key: string;
    };
    const c = new OpenAI({ baseURL: `${base}/v1`, apiKey: k.key, maxRetries: 0 });
    await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] });
    expect((await admin(env, "key", "revoke", k.id)).code).toBe(0);
    const started = Date.now();
    await eventually(
      () =>
        c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }).then(
          () => "ok",
          (e: unknown) => (e instanceof OpenAI.AuthenticationError ? "refused" : String(e)),
        ),
      (r) => r === "refused",
      1_000,
      50,
    );
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
