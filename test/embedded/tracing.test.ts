import { writeFileSync } from "node:fs";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// OpenTelemetry end to end: the product configured with the standard OTEL_* variables exports over OTLP/HTTP to
// a receiver started here, which decodes what arrives.

const MODEL = "gpt-4o-mini-2024-07-18";
let mock: OpenAIMock;
let flaky: OpenAIMock;
let otlp: OtlpReceiver;
let gw: Gateway;
let apiKey: string;

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-otel");
  flaky = await startOpenAIMock("sk-upstream-otel");
  otlp = await startOtlpReceiver();
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "openai-flaky", protocol: "openai", baseUrl: flaky.url, apiKey: "${UPSTREAM_KEY}" },
        { name: "openai-main", protocol: "openai", baseUrl: mock.url, apiKey: "${UPSTREAM_KEY}" },
      ],
      models: [
        {
          id: MODEL,
          reasoning: false,
          price: { input: 0.15, output: 0.6 },
          // the flaky route first; the main one takes over when it fails
          routes: [
            { upstream: "openai-flaky", model: MODEL, weight: 1, priority: 0 },
            { upstream: "openai-main", model: MODEL, weight: 1, priority: 1 },
          ],
        },
      ],
    },
    env: {
      UPSTREAM_KEY: "sk-upstream-otel",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_SERVICE_NAME: "gateway-under-test",
      MODELGATE_RETRY_ATTEMPTS: "2",
      MODELGATE_RETRY_BASE_MS: "5",
      MODELGATE_BREAKER_FAILURES: "100",
    },
  });
  await gw.admin("account create", { name: "acme", balance: "10" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "acme" })).key;
  await waitForKey(gw, apiKey);
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  await otlp?.close();
  await mock?.close();
  await flaky?.close();
});

describe("OpenTelemetry traces (OTLP/HTTP)", () => {
  it("traces GraphQL operations by name and type, never their variables", async () => {
    const res = await fetch(`${gw.bases[0]}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        query:
          "mutation SignIn($email: String!, $password: String!) { login(email: $email, password: $password) { secondStepRequired } }",
        variables: { email: "nobody@acme.test", password: "secret-value-in-a-variable" },
        operationName: "SignIn",
      }),
    });
    expect(res.status).toBe(200);
    const spans = await eventually(
      async () => otlp.spans.filter((s) => s.name === "graphql.mutation SignIn"),
      (s) => s.length === 1,
      10_000,
    );
    expect(spans[0]!.service).toBe("gateway-under-test");
    expect(spans[0]!.attributes).toEqual({
      "graphql.operation.type": "mutation",
      "graphql.operation.name": "SignIn",
      "graphql.error.count": 1,
    });
    expect(spans[0]!.status.code).toBe(2); // ERROR: the sign-in was refused
    expect(otlp.raw.join("\n")).not.toContain("secret-value");
    expect(otlp.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
  });

  it("traces usage settlement batches", async () => {
    const client = new OpenAI({ baseURL: `${gw.bases[0]}/v1`, apiKey, maxRetries: 0 });
    await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] });
    const settle = await eventually(
      async () => otlp.spans.filter((s) => s.name === "modelgate.usage.settle"),
      (s) => s.length >= 1,
      10_000,
    );
    expect(Number(settle[0]!.attributes["modelgate.usage.events"])).toBeGreaterThanOrEqual(1);
    expect(settle[0]!.endNs).toBeGreaterThan(settle[0]!.startNs);
  });

  it("traces a call with the GenAI conventions: the caller's trace, the limits, each attempt (a retry, a failover) and the relay", async () => {
    flaky.queue.push({ status: 500, errorMessage: "boom" }, { status: 503, errorMessage: "still down" });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const client = new OpenAI({
      baseURL: `${gw.bases[0]}/v1`,
      apiKey,
      maxRetries: 0,
      defaultHeaders: { traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    const res = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: "user", content: "a prompt that must not be traced" }] })
      .withResponse();
    const requestId = res.response.headers.get("x-gateway-request-id")!;
    const root = (
      await eventually(
        async () => otlp.spans.filter((s) => s.attributes["modelgate.request_id"] === requestId),
        (s) => s.length === 1,
        10_000,
      )
    )[0]!;
    const children = await eventually(
      async () => otlp.spans.filter((s) => s.parentSpanId === root.spanId),
      (s) => s.length === 5,
      10_000,
    );
    // the caller's trace continues through the gateway
    expect(root.traceId).toBe(traceId);
    expect(root.parentSpanId).toBe(callerSpan);
    expect(root.name).toBe(`chat ${MODEL}`);
    expect(root.kind).toBe(2); // SERVER
    expect(root.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": MODEL,
      "gen_ai.response.model": MODEL,
      "gen_ai.usage.input_tokens": res.data.usage!.prompt_tokens,
      "gen_ai.usage.output_tokens": res.data.usage!.completion_tokens,
      "http.response.status_code": 200,
      "modelgate.upstream": "openai-main",
    });
    const attempts = children.filter((s) => s.kind === 3).sort((a, b) => Number(a.startNs - b.startNs)); // CLIENT
    expect(
      attempts.map((a) => [
        a.attributes["modelgate.upstream"],
        a.attributes["modelgate.attempt"],
        a.attributes["http.response.status_code"],
      ]),
    ).toEqual([
      ["openai-flaky", 1, 500],
      ["openai-flaky", 2, 503],
      ["openai-main", 1, 200],
    ]);
    expect(attempts[0]!.status.code).toBe(2);
    expect(attempts[2]!.attributes).toMatchObject({
      "gen_ai.provider.name": "openai",
      "server.address": "127.0.0.1",
      "gen_ai.request.model": MODEL,
    });
    expect(
      children
        .map((c) => c.name)
        .filter((n) => n.startsWith("modelgate."))
        .sort(),
    ).toEqual(["modelgate.ratelimit", "modelgate.relay"]);
    // each attempt sent its own span as the parent of the upstream's work
    const sent = mock.requests.at(-1)!.headers.traceparent as string;
    expect(sent).toBe(`00-${traceId}-${attempts[2]!.spanId}-01`);
    expect(otlp.raw.join("\n")).not.toContain("must not be traced");
    // TRACE_DUMP=<file>: write the decoded trace, as shown in docs/operations.md
    if (process.env.TRACE_DUMP) {
      const line = (s: typeof root, depth: number) =>
        `${"  ".repeat(depth)}${s.name} [${["", "internal", "server", "client"][s.kind]}] ${(Number(s.endNs - s.startNs) / 1e6).toFixed(2)} ms ${JSON.stringify(s.attributes)}`;
      writeFileSync(
        process.env.TRACE_DUMP,
        [line(root, 0), ...children.sort((a, b) => Number(a.startNs - b.startNs)).map((c) => line(c, 1))].join("\n") +
          "\n",
      );
    }
  });
});
