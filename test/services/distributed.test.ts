import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectLedgerMatchesBatches } from "../helpers/ledger.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { admin, eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Distributed mode against the machine's real Postgres and Redis: one control plane, two data-plane replicas,
// the admin CLI straight on the database, the official openai SDK against each replica.

const MODEL = "gpt-4o-mini-2024-07-18";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
let mock: OpenAIMock;
let db: Awaited<ReturnType<typeof freshDatabase>>;
let env: NodeJS.ProcessEnv;
const METRICS_TOKEN = "distributed-metrics-token-0123456789";
const METRICS_AUTH = { authorization: `Bearer ${METRICS_TOKEN}` };
let controlPlane: Proc;
const replicas: { proc: Proc; base: string }[] = [];
let dataDir: string;
let apiKey: string;
let keyId: string;
let prefix: string;

const balanceMicro = async () =>
  BigInt(((await admin(env, "account", "show", "--account", "globex")).json as { balanceMicro: string }).balanceMicro);

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-dist");
  db = await freshDatabase("dist");
  dataDir = mkdtempSync(join(tmpdir(), "mg-dist-"));
  const config = join(dataDir, "gateway.json");
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [{ name: "openai-main", protocol: "openai", baseUrl: mock.url, apiKey: "${UPSTREAM_KEY}" }],
      models: [
        {
          id: MODEL,
          reasoning: false,
          price: { input: 0.15, output: 0.6 },
          routes: [{ upstream: "openai-main", model: MODEL, weight: 1 }],
        },
      ],
    }),
  );
  prefix = `mgtest:${randomBytes(4).toString("hex")}:`;
  env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    MODELGATE_REDIS_PREFIX: prefix,
    MODELGATE_MASTER_KEY: randomBytes(32).toString("hex"),
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    UPSTREAM_KEY: "sk-upstream-dist",
    MODELGATE_DRAIN_MS: "2000",
    MODELGATE_METRICS_TOKEN: METRICS_TOKEN, // /metrics needs it (issue 25)
  };
  const cpPort = await freePort();
  controlPlane = startTs("control-plane/src/main/control-plane.ts", { ...env, PORT: String(cpPort) });
  await waitForHttp(`http://127.0.0.1:${cpPort}/healthz`, controlPlane);
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const proc = startTs("data-plane/src/main.ts", { ...env, PORT: String(port), DATABASE_URL: "" });
    replicas.push({ proc, base: `http://127.0.0.1:${port}` });
  }
  for (const r of replicas) await waitForHttp(`${r.base}/readyz`, r.proc, 60_000, METRICS_AUTH);

  expect((await admin(env, "account", "create", "--name", "globex", "--balance", "25")).code).toBe(0);
  expect(
    (await admin(env, "contract", "set", "--account", "globex", "--model", MODEL, "--input", "0.1", "--output", "0.3"))
      .code,
  ).toBe(0);
  const created = (await admin(env, "key", "create", "--account", "globex", "--name", "dist")).json as {
    id: string;
    key: string;
  };
  apiKey = created.key;
  keyId = created.id;
}, 180_000);

afterAll(async () => {
  for (const r of replicas) await r.proc.stop();
  await controlPlane?.stop();
  await mock?.close();
  await db?.drop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  rmSync(dataDir, { recursive: true, force: true });
});

const sdk = (base: string, key = apiKey) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });

describe("distributed mode", () => {
  it("serves a key created through the CLI on both replicas, with usage, billed exactly once each", async () => {
    const before = await eventually(balanceMicro, () => true);
    const ids: string[] = [];
    for (const r of replicas) {
      // The new key reaches every replica through the Redis snapshot within a second.
      const c = sdk(r.base);
      mock.queue.push({ content: "hi", promptTokens: 1000, completionTokens: 2000 });
      const res = (await eventually(
        () =>
          c.chat.completions
            .create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
            .withResponse()
            .catch((e: unknown) => e),
        (v) => !(v instanceof Error),
        3_000,
        50,
      )) as { data: OpenAI.ChatCompletion; response: Response };
      expect(res.data.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 2000 });
      ids.push(res.response.headers.get("x-gateway-request-id")!);
      const stream = await c.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "go" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined;
      let text = "";
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe("Hello there! How can I help?");
      expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 8 });
    }
    // Per replica: 1000 × 0.1 + 2000 × 0.3 = 700 micro, and 12 × 0.1 + 8 × 0.3 = 3.6 → 4 micro.
    const expected = before - 2n * (700n + 4n);
    expect(await eventually(balanceMicro, (b) => b === expected, 10_000)).toBe(expected);
    const rows = await db.db.prisma.usageLog.findMany({ where: { requestId: { in: ids } } });
    expect(rows.map((r) => r.costMicro)).toEqual([700n, 700n]);
    // the key's four calls, each in a batch whose ledger lines sum to its rows' cost
    const all = await db.db.prisma.usageLog.findMany({ where: { apiKeyId: keyId } });
    expect(all).toHaveLength(4);
    await expectLedgerMatchesBatches(db.db.prisma, all);
  });

  it("a key revoked through the CLI is refused by both replicas within a second", async () => {
    for (const r of replicas)
      await sdk(r.base).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] });
    expect((await admin(env, "key", "revoke", keyId)).code).toBe(0);
    const revokedAt = Date.now();
    await Promise.all(
      replicas.map((r) =>
        eventually(
          () =>
            sdk(r.base)
              .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] })
              .then(
                () => "served",
                (e: unknown) => (e instanceof OpenAI.AuthenticationError ? "refused" : String(e)),
              ),
          (v) => v === "refused",
          1_000,
          25,
        ),
      ),
    );
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
  });

  it("admits calls far from their limits without waiting for Redis, while Redis counts every one for all replicas", async () => {
    const created = (
      await admin(env, "key", "create", "--account", "globex", "--name", "local", "--rpm", "100", "--concurrency", "50")
    ).json as { id: string; key: string };
    const [a, b] = replicas;
    const remaining = async (base: string) => {
      const c = sdk(base, created.key);
      const res = (await eventually(
        () =>
          c.chat.completions
            .create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
            .withResponse()
            .catch((e: unknown) => e),
        (v) => !(v instanceof Error),
        3_000,
        50,
      )) as { response: Response };
      return Number(res.response.headers.get("x-ratelimit-remaining-requests"));
    };
    const start = Date.now();
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) seen.push(await remaining(a!.base));
    // The replica counts its own calls: the remaining requests go down one by one (100 rpm refills one per 600 ms).
    for (let i = 1; i < seen.length; i++)
      expect(seen[i]! - seen[i - 1]!).toBeLessThanOrEqual(-1 + Math.ceil((Date.now() - start) / 600));
    const metrics = await (await fetch(`${a!.base}/metrics`, { headers: METRICS_AUTH })).text();
    const granted = Number(/modelgate_ratelimit_local_admissions_total\{kind="granted"\} (\d+)/.exec(metrics)?.[1]);
    expect(granted).toBeGreaterThanOrEqual(5); // the first waits for Redis, then locally while more than 50 are left
    expect(metrics).toContain('modelgate_ratelimit_local_admissions_total{kind="overrun"} 0');
    // a tells Redis of the calls it admitted locally at the end of its 20 ms sync window, in its own process: wait
    // for Redis to hold them rather than for a pause. Each call a takes moves the key's rpm TAT (GCRA) 600 ms on
    // from the later of the TAT and the call's time, which is after `start`: once a's ten are in, the TAT is at
    // least 6 s past `start` (and then the bound below holds whatever the count: b's call leaves at most
    // 89 + its own refill since `start`).
    const redis = new Redis(REDIS_URL);
    try {
      await eventually(
        async () => {
          const [rpm] = await redis.keys(`${prefix}rl:{acct:*}:k:${created.id}:rpm`);
          return rpm === undefined ? 0 : Number(await redis.get(rpm));
        },
        (tat) => tat >= start + 10 * 600,
        5_000,
        10,
      );
    } finally {
      redis.disconnect();
    }
    // The other replica has no view of this key: Redis decides its call, and has all eleven.
    const other = await remaining(b!.base);
    const refilled = Math.floor((Date.now() - start) / 600);
    expect(other).toBeGreaterThanOrEqual(100 - 11);
    expect(other).toBeLessThanOrEqual(100 - 11 + refilled);
  });

  it("answers unknown paths and unknown models with 404 in OpenAI's shape on a replica", async () => {
    const res = await fetch(`${replicas[0]!.base}/chat/completions`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe("unknown_path");
    expect(body.error.message).toContain(`request id: ${res.headers.get("x-gateway-request-id")}`);
  });
});
afterAll(() => {
  if (process.env.TEST_LOG_LEVEL)
    console.log(controlPlane.output().slice(-4000), replicas.map((r) => r.proc.output().slice(-2000)).join("\n---\n"));
});
