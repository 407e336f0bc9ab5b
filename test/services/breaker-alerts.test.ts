import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { verify } from "../../control-plane/src/alerts/signature.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Operators' circuit-breaker alert in distributed mode: the breakers live in the two data-plane replicas, which
// report their states to Redis every few hundred ms (here); the control plane's alert pass reads the reports,
// and an upstream whose breaker opened is alerted once (signed webhook), however many passes see it open.

const MODEL = "gpt-4o-mini-2024-07-18";
const OPERATOR = { email: "ops@breaker.test", password: "operator-password-breaker-1" };
let gw: Gateway;
let mock: OpenAIMock;
let server: Server;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let cookie = "";

async function gql(query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${gw.controlPlaneBase}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const set = res.headers.getSetCookie().find((c) => c.startsWith("mg_session="));
  if (set) cookie = set.split(";")[0]!;
  const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
  if (body.errors?.length) throw new Error(JSON.stringify(body.errors));
  return body.data!;
}

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-breaker");
  mock.fallback = { status: 500, errorMessage: "upstream down" };
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  gw = await startGateway("distributed", {
    replicas: 2,
    config: {
      upstreams: [{ name: "flaky", protocol: "openai", baseUrl: mock.url, apiKey: "${BREAKER_UPSTREAM_KEY}" }],
      models: [
        {
          id: MODEL,
          reasoning: false,
          price: { input: 1, output: 2 },
          routes: [{ upstream: "flaky", model: "gpt-4o-mini", weight: 1 }],
        },
      ],
    },
    env: {
      BREAKER_UPSTREAM_KEY: "sk-upstream-breaker",
      MODELGATE_OPERATOR_EMAIL: OPERATOR.email,
      MODELGATE_OPERATOR_PASSWORD: OPERATOR.password,
      MODELGATE_BREAKER_FAILURES: "2",
      MODELGATE_BREAKER_MIN_ACCOUNTS: "1",
      MODELGATE_BREAKER_OPEN_MS: "600000",
      MODELGATE_RETRY_ATTEMPTS: "1",
      MODELGATE_BREAKER_REPORT_MS: "200",
      MODELGATE_ALERTS_BREAKER_MS: "200",
    },
  });
});

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
  await new Promise<void>((r) => server?.close(() => r()));
});

it("alerts the operators once, by signed webhook, when an upstream's breaker opens on a replica", async () => {
  await gql(`mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`, {
    e: OPERATOR.email,
    p: OPERATOR.password,
  });
  await gql(
    `mutation { setAlertSettings(operators: true, input: { breakerOpen: true, emails: ["oncall@breaker.test"] }) { breakerOpen } }`,
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ops`;
  const secret = (
    (await gql(`mutation($u: String!) { addAlertWebhook(operators: true, url: $u) { secret } }`, { u: url }))
      .addAlertWebhook as { secret: string }
  ).secret;

  const account = await gw.admin<{ id: string }>("account create", { name: "caller", balance: "10" });
  const key = await gw.admin<{ id: string; key: string }>("key create", { account: "caller" });
  expect(account.id).toBeTruthy();
  await waitForKey(gw, key.key);
  const client = new OpenAI({ baseURL: `${gw.bases[1]}/v1`, apiKey: key.key, maxRetries: 0 });
  // failures until the replica's breaker refuses at once (503 without calling the upstream)
  await eventually(
    async () => {
      const before = mock.requests.length;
      const status = await client.chat.completions
        .create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
        .then(
          () => 200,
          (e: { status?: number }) => e.status ?? 0,
        );
      return { status, upstreamCalled: mock.requests.length > before };
    },
    (r) => !r.upstreamCalled,
    10_000,
    0,
  );

  await eventually(
    async () => received.length,
    (n) => n >= 1,
    15_000,
  );
  const alert = received[0]!;
  expect(
    verify(
      secret,
      String(alert.headers["x-modelgate-timestamp"]),
      alert.body,
      String(alert.headers["x-modelgate-signature"]),
    ),
  ).toBe(true);
  const body = JSON.parse(alert.body) as { type: string; account: unknown; data: { upstream: string } };
  expect(body).toMatchObject({ type: "breaker_open", account: null, data: { upstream: "flaky" } });

  // Saving the settings evaluates them at once (and answers after): the breaker is still open, nothing new fires.
  await gql(`mutation { setAlertSettings(operators: true, input: { breakerOpen: true }) { breakerOpen } }`);
  await gql(`mutation { setAlertSettings(operators: true, input: { breakerOpen: true }) { breakerOpen } }`);
  const events = (await gql(`{ alertEvents(operators: true) { kind } }`)).alertEvents as { kind: string }[];
  expect(events).toEqual([{ kind: "breaker_open" }]);
  expect(received).toHaveLength(1);
});
