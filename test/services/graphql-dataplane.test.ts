import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "../helpers/postgres.ts";
import { eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// A key created, restricted or revoked through the GraphQL API changes what a data-plane replica does within
// a second: control plane and replica as separate processes on real Postgres and Redis.

const MODEL_A = "acme-chat-2025-01-01";
const MODEL_B = "acme-mini-2025-02-01";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const OPERATOR = { email: "ops@modelgate.test", password: "operator-password-9" };

let mock: OpenAIMock;
let db: Awaited<ReturnType<typeof freshDatabase>>;
let cp: Proc;
let dp: Proc;
let cpBase: string;
let dpBase: string;
let dataDir: string;
let prefix: string;
let cookie = "";

async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(`${cpBase}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ query, variables }),
  });
  const set = res.headers.get("set-cookie");
  if (set) cookie = set.split(";")[0]!;
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join("; "));
  return body.data!;
}

beforeAll(async () => {
  mock = await startOpenAIMock("sk-up");
  db = await freshDatabase("gqldp");
  dataDir = mkdtempSync(join(tmpdir(), "mg-gqldp-"));
  const config = join(dataDir, "gateway.json");
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [{ name: "main", protocol: "openai", baseUrl: mock.url, apiKey: "sk-up" }],
      models: [MODEL_A, MODEL_B].map((id) => ({
        id,
        price: { input: 1, output: 2 },
        routes: [{ upstream: "main", model: id }],
      })),
    }),
  );
  prefix = `mgtest:${randomBytes(4).toString("hex")}:`;
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    MODELGATE_REDIS_PREFIX: prefix,
    MODELGATE_MASTER_KEY: randomBytes(32).toString("hex"),
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    MODELGATE_OPERATOR_EMAIL: OPERATOR.email,
    MODELGATE_OPERATOR_PASSWORD: OPERATOR.password,
    MODELGATE_DRAIN_MS: "2000",
  };
  const cpPort = await freePort();
  cpBase = `http://127.0.0.1:${cpPort}`;
  cp = startTs("control-plane/src/main/control-plane.ts", { ...env, PORT: String(cpPort) });
  await waitForHttp(`${cpBase}/healthz`, cp);
  const dpPort = await freePort();
  dpBase = `http://127.0.0.1:${dpPort}`;
  dp = startTs("data-plane/src/main.ts", { ...env, PORT: String(dpPort), DATABASE_URL: "" });
  await waitForHttp(`${dpBase}/readyz`, dp);
  const login = await gql<{ login: { secondStepRequired: boolean } }>(
    `mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`,
    { e: OPERATOR.email, p: OPERATOR.password },
  );
  expect(login.login.secondStepRequired).toBe(false);
  expect(cookie).toMatch(/^mg_session=/);
}, 180_000);

afterAll(async () => {
  await dp?.stop();
  await cp?.stop();
  await mock?.close();
  await db?.drop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Polls the replica until it gives the expected outcome; returns how long that took after `since`. */
async function within(key: string, model: string, expected: "ok" | "401" | "403", since: number): Promise<number> {
  const client = new OpenAI({ baseURL: `${dpBase}/v1`, apiKey: key, maxRetries: 0 });
  await eventually(
    () =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }).then(
        () => "ok",
        (e: unknown) => String((e as { status?: number }).status),
      ),
    (v) => v === expected,
    1_000,
    20,
  );
  return Date.now() - since;
}

describe("GraphQL changes reach the data plane", () => {
  it("creates, restricts and revokes a key through GraphQL, each effective on the replica within a second", async () => {
    const { createCustomer } = await gql<{ createCustomer: { account: { id: string } } }>(
      `mutation($i: CreateCustomerInput!) { createCustomer(input: $i) { account { id } } }`,
      { i: { name: "initech", initialBalance: "50" } },
    );
    const accountId = createCustomer.account.id;

    let t = Date.now();
    const { createApiKey } = await gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
      `mutation($a: ID, $i: ApiKeyRestrictionsInput!) { createApiKey(accountId: $a, input: $i) { key apiKey { id } } }`,
      { a: accountId, i: { name: "svc" } },
    );
    expect(await within(createApiKey.key, MODEL_A, "ok", t)).toBeLessThan(1_000);

    t = Date.now();
    await gql(`mutation($id: ID!, $i: ApiKeyRestrictionsInput!) { updateApiKey(id: $id, input: $i) { id } }`, {
      id: createApiKey.apiKey.id,
      i: { allowedModels: [MODEL_B] },
    });
    expect(await within(createApiKey.key, MODEL_A, "403", t)).toBeLessThan(1_000);
    await within(createApiKey.key, MODEL_B, "ok", Date.now());

    t = Date.now();
    await gql(`mutation($id: ID!) { revokeApiKey(id: $id) { status } }`, { id: createApiKey.apiKey.id });
    expect(await within(createApiKey.key, MODEL_B, "401", t)).toBeLessThan(1_000);
  });
});
