import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { expectLedgerMatchesBatches } from "../helpers/ledger.ts";
import { eventually, freePort } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Upstream and infrastructure faults in distributed mode (control plane + two replicas on real Postgres, and a
// Redis of this file's own, so stopping it disturbs no other test): refused connections and failover, 429/500
// retried then failed over or surfaced, a stall before headers, a stream reset midway, the circuit breaker,
// and Redis going away under load with every usage event settled exactly once.

const UPSTREAM_KEY = "sk-upstream-faults";
const MAIN = "gpt-4o-mini-2024-07-18";
const FAILOVER = "fo-chat-2025-01-01";
const DEAD = "dead-chat-2025-01-01";
const FLAKY_FO = "flakyfo-chat-2025-01-01";
const FLAKY = "flaky-chat-2025-01-01";
const SLOW = "slow-chat-2025-01-01";
const BREAKER = "brk-chat-2025-01-01";
const FIRST_BYTE_MS = 800;
const BREAKER_FAILURES = 3;
const BREAKER_OPEN_MS = 1_500;
// 1000 prompt × 1 + 1000 completion × 2 per 1M tokens
const COST = 3000n;
/** calls the load of "Redis stopped and restarted" must have served before the outage, and again after it */
const LOAD_CALLS = 30;
/** calls it must have served while Redis was down (each one from the last snapshot) */
const OUTAGE_CALLS = 10;
/** how stale /readyz must say the snapshot is while Redis is down */
const STALE_MS = 3_000;

// /readyz names upstreams only to a caller with the operations token.
const OPS_TOKEN = "faults-ops-token";
const OPS = { headers: { authorization: `Bearer ${OPS_TOKEN}` } };

let good: OpenAIMock;
let flaky: OpenAIMock;
let slow: OpenAIMock;
let brk: OpenAIMock;
let gw: Gateway;
let redisPort: number;
let redisDir: string;
let apiKey: string;
/** replica A: breaker effectively off (other tests fail on purpose); replica B: breaker after 3 failures */
let A: string;
let B: string;

const startRedis = () =>
  execFileSync("redis-server", [
    "--port",
    String(redisPort),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "yes",
    "--dir",
    redisDir,
    "--pidfile",
    join(redisDir, "redis.pid"),
    "--logfile",
    join(redisDir, "redis.log"),
  ]);
const stopRedis = () => {
  try {
    execFileSync("redis-cli", ["-p", String(redisPort), "shutdown", "nosave"], { stdio: "ignore" });
  } catch {
    /* already down */
  }
};
const redisUp = () => {
  try {
    return (
      execFileSync("redis-cli", ["-p", String(redisPort), "ping"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim() === "PONG"
    );
  } catch {
    return false;
  }
};

beforeAll(async () => {
  [good, flaky, slow, brk] = await Promise.all([
    startOpenAIMock(UPSTREAM_KEY),
    startOpenAIMock(UPSTREAM_KEY),
    startOpenAIMock(UPSTREAM_KEY),
    startOpenAIMock(UPSTREAM_KEY),
  ]);
  for (const m of [good, flaky, brk]) m.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
  slow.fallback = { content: "late", delayMs: 5_000 };
  const deadPort = await freePort(); // nothing listens there: connections are refused
  redisPort = await freePort();
  redisDir = mkdtempSync(join(tmpdir(), "mg-redis-"));
  startRedis();
  await eventually(
    async () => redisUp(),
    (up) => up,
    10_000,
  );
  const up = (name: string, baseUrl: string, timeouts?: object) => ({
    name,
    protocol: "openai",
    baseUrl,
    apiKey: "${FAULT_UPSTREAM_KEY}",
    ...(timeouts ? { timeouts } : {}),
  });
  const model = (id: string, routes: [string, string][]) => ({
    id,
    reasoning: false,
    price: { input: 1, output: 2 },
    routes: routes.map(([upstream, m], priority) => ({ upstream, model: m, weight: 1, priority })),
  });
  gw = await startGateway("distributed", {
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    env: { FAULT_UPSTREAM_KEY: UPSTREAM_KEY, MODELGATE_RETRY_BASE_MS: "50", MODELGATE_METRICS_TOKEN: OPS_TOKEN },
    replicaEnv: (i) =>
      i === 0
        ? { MODELGATE_BREAKER_FAILURES: "1000000" }
        : // One account's evidence is enough here (this file has one account); test/security/breaker-tenants.test.ts
          // holds the default, where it never is.
          {
            MODELGATE_BREAKER_FAILURES: String(BREAKER_FAILURES),
            MODELGATE_BREAKER_OPEN_MS: String(BREAKER_OPEN_MS),
            MODELGATE_BREAKER_MIN_ACCOUNTS: "1",
          },
    config: {
      upstreams: [
        up("good", good.url),
        up("dead", `http://127.0.0.1:${deadPort}/v1`, { connectMs: 1_000 }),
        up("flaky", flaky.url),
        up("slow", slow.url, { firstByteMs: FIRST_BYTE_MS }),
        up("brk", brk.url),
      ],
      models: [
        model(MAIN, [["good", "main"]]),
        model(FAILOVER, [
          ["dead", "fo-dead"],
          ["good", "fo-good"],
        ]),
        model(DEAD, [["dead", "dead"]]),
        model(FLAKY_FO, [
          ["flaky", "ffo-flaky"],
          ["good", "ffo-good"],
        ]),
        model(FLAKY, [["flaky", "flaky"]]),
        model(SLOW, [["slow", "slow"]]),
        model(BREAKER, [["brk", "brk"]]),
      ],
    },
  });
  [A, B] = gw.bases as [string, string];
  await gw.admin("account create", { name: "ops", balance: "100" });
  const k = await gw.admin<{ id: string; key: string }>("key create", { account: "ops" });
  apiKey = k.key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  if (redisPort && !redisUp()) {
    try {
      startRedis(); // so the gateway's own cleanup can remove its keys and exit cleanly
    } catch {
      /* ignore */
    }
  }
  await gw?.stop();
  stopRedis();
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
  await Promise.all([good, flaky, slow, brk].map((m) => m?.close()));
});

const sdk = (base: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const ask = (base: string, model: string) =>
  sdk(base)
    .chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] })
    .withResponse();
const seenModels = (m: OpenAIMock, since: number) => m.requests.slice(since).map((r) => r.body.model);
const prisma = () => gw.prisma!;
const balance = () => gw.balance("ops");

/** The gateway's refusal: status, code, request id in header and message. */
async function failure(p: Promise<unknown>, status: number, code: string): Promise<string> {
  const e = (await p.then(
    () => null,
    (err: unknown) => err,
  )) as InstanceType<typeof OpenAI.APIError> | null;
  expect(e, `expected ${status} ${code}`).toBeInstanceOf(OpenAI.APIError);
  expect({ status: e!.status, code: e!.code }).toEqual({ status, code });
  const id = e!.headers!.get("x-gateway-request-id")!;
  expect(id).toMatch(/^req_/);
  expect((e!.error as { message: string }).message).toContain(`(request id: ${id})`);
  return id;
}

/** A failed call leaves at most a zero-cost usage row (metadata), and its batch's ledger line charges nothing for it. */
async function notCharged(id: string): Promise<void> {
  const row = await eventually(
    () => prisma().usageLog.findFirst({ where: { requestId: id } }),
    (r) => r !== null,
    10_000,
  );
  expect(row!.costMicro).toBe(0n);
  await expectLedgerMatchesBatches(prisma(), [row!]);
}

describe("upstream faults", () => {
  it("a route that refuses connections is retried, then the next route answers; alone it is 502 upstream_unreachable", async () => {
    const since = good.requests.length;
    const { data, response } = await ask(A, FAILOVER);
    expect(data.choices[0]!.message.content).toBe("fine");
    expect(seenModels(good, since)).toEqual(["fo-good"]);
    const id = response.headers.get("x-gateway-request-id")!;
    const row = await eventually(
      () => prisma().usageLog.findFirst({ where: { requestId: id } }),
      (r) => r !== null,
      10_000,
    );
    expect(row).toMatchObject({ upstream: "good", status: 200, costMicro: COST });

    const started = Date.now();
    const failed = await failure(ask(A, DEAD), 502, "upstream_unreachable");
    expect(Date.now() - started).toBeLessThan(10_000);
    await notCharged(failed);
  });

  it("429 and 500 from an upstream are retried (the mock sees every attempt), then failed over, or surfaced as 429/502", async () => {
    for (const [status, code, gatewayStatus] of [
      [429, "upstream_rate_limited", 429],
      [500, "upstream_error", 502],
    ] as const) {
      flaky.fallback = { status, errorMessage: `scripted ${status}` };
      let sinceFlaky = flaky.requests.length;
      const sinceGood = good.requests.length;
      await ask(A, FLAKY_FO);
      expect(seenModels(flaky, sinceFlaky)).toEqual(["ffo-flaky", "ffo-flaky", "ffo-flaky"]); // 3 tries in all
      expect(seenModels(good, sinceGood)).toEqual(["ffo-good"]);

      sinceFlaky = flaky.requests.length;
      const id = await failure(ask(A, FLAKY), gatewayStatus, code);
      expect(seenModels(flaky, sinceFlaky)).toEqual(["flaky", "flaky", "flaky"]);
      await notCharged(id);
    }
    flaky.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
  });

  it("an upstream that stalls before its headers: 504 upstream_timeout after the route's first-byte timeout", async () => {
    const since = slow.requests.length;
    const started = Date.now();
    const id = await failure(ask(A, SLOW), 504, "upstream_timeout");
    const elapsed = Date.now() - started;
    const attempts = slow.requests.length - since;
    console.log(`stall: 504 after ${elapsed} ms, ${attempts} attempt(s) of ${FIRST_BYTE_MS} ms`);
    expect(attempts).toBeGreaterThanOrEqual(1);
    // undici runs its header timeouts on a coarse clock (a 500 ms tick), so a timeout fires within ±0.5 s.
    expect(elapsed).toBeGreaterThanOrEqual(FIRST_BYTE_MS * attempts - 500);
    expect(elapsed).toBeLessThan(5_000); // well before the upstream's own 5 s answer
    await notCharged(id);
  });

  it("a stream reset midway: the SDK throws, and the call is charged once, for what was delivered only", async () => {
    const before = await balance();
    good.queue.push({
      content: "one two three four five six seven eight nine ten",
      breakAfterChunks: 3,
      promptTokens: 1000,
      completionTokens: 1000,
    });
    const { data: stream, response } = await sdk(A)
      .chat.completions.create({
        model: MAIN,
        messages: [{ role: "user", content: "count" }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const id = response.headers.get("x-gateway-request-id")!;
    let text = "";
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    })().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toContain("The upstream stream failed before it finished");
    expect((err as Error).message).toContain(`(request id: ${id})`);
    expect(text).toBe("one two three ");
    const row = await eventually(
      () => prisma().usageLog.findFirst({ where: { requestId: id } }),
      (r) => r !== null,
      10_000,
    );
    expect(row).toMatchObject({ status: 502, errorCode: "upstream_stream_error" });
    // The upstream's usage never came, so the gateway counts: "one two three " is 14 characters = 4 completion
    // tokens × 2 micro = 8 micro, plus the prompt as estimated at admission (its request body, 4 characters a
    // token) × 1 micro; the full answer would have cost 3000.
    expect(row!.completionTokens).toBe(4);
    expect(row!.promptTokens).toBeGreaterThan(0);
    expect(row!.promptTokens).toBeLessThan(100);
    expect(row!.costMicro).toBe(BigInt(row!.promptTokens) * 1n + 8n);
    // A call served after the cut one on the same replica is the barrier: usage settles in the order a replica's
    // calls end, so once its row is in, a second event for the cut call would have been settled too.
    const { response: after } = await ask(A, MAIN);
    const barrier = after.headers.get("x-gateway-request-id")!;
    await eventually(
      () => prisma().usageLog.count({ where: { requestId: barrier } }),
      (n) => n === 1,
      10_000,
    );
    expect(await prisma().usageLog.count({ where: { requestId: id } })).toBe(1);
    const lines = await expectLedgerMatchesBatches(prisma(), [row!]);
    expect(lines.length).toBeGreaterThan(0);
    expect(await balance()).toBe(before - row!.costMicro - COST);
  });

  it("the circuit breaker opens after repeated failures, shows in /readyz, skips the upstream, and closes after a good probe", async () => {
    const readyz = async () =>
      ((await (await fetch(`${B}/readyz`, OPS)).json()) as { upstreams: Record<string, string> }).upstreams;
    brk.fallback = { status: 500, errorMessage: "down" };
    const since = brk.requests.length;
    await failure(ask(B, BREAKER), 502, "upstream_error");
    expect(brk.requests.length - since).toBe(BREAKER_FAILURES);
    expect((await readyz()).brk).toBe("open");
    // While open, calls do not reach the upstream at all.
    const before = brk.requests.length;
    const { body } = await (async () => {
      const res = await fetch(`${B}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: BREAKER, messages: [{ role: "user", content: "x" }] }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeTruthy();
      return { body: (await res.json()) as { error: { code: string } } };
    })();
    expect(body.error.code).toBe("upstream_unavailable");
    expect(brk.requests.length).toBe(before);
    // Replica A has its own breaker, still closed.
    expect(
      ((await (await fetch(`${A}/readyz`, OPS)).json()) as { upstreams: Record<string, string> }).upstreams.brk,
    ).toBeUndefined();
    // The upstream recovers; after the open period one probe goes through and closes the breaker.
    brk.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
    await eventually(
      async () => (await readyz()).brk,
      (state) => state === "half_open",
      BREAKER_OPEN_MS + 5_000,
    );
    expect(brk.requests.length).toBe(before); // half open by the clock alone: no call went to try it
    await ask(B, BREAKER);
    expect((await readyz()).brk).toBe("closed");
  });
});

describe("Redis restarted empty (no persistence)", () => {
  it("with no traffic: policy changes still reach every replica afterwards", async () => {
    const prefix = gw.cliEnv.MODELGATE_REDIS_PREFIX!;
    const cli = (...args: string[]) =>
      execFileSync("redis-cli", ["-p", String(redisPort), ...args], { encoding: "utf8" }).trim();
    const versionBefore = ((await (await fetch(`${A}/readyz`, OPS)).json()) as { snapshotVersion: number })
      .snapshotVersion;
    expect(versionBefore).toBeGreaterThan(1);
    stopRedis();
    await eventually(
      async () => redisUp(),
      (up) => !up,
      5_000,
    );
    startRedis();
    await eventually(
      async () => redisUp(),
      (up) => up,
      10_000,
    );
    // The control plane listens for change requests again (its subscriber reconnected)…
    await eventually(
      async () => cli("pubsub", "numsub", `${prefix}{ctl}:control:changed`).split("\n")[1],
      (n) => n === "1",
      15_000,
      200,
    );
    // …so a key created now must reach both replicas, although Redis forgot the snapshot and its version counter.
    const k = await gw.admin<{ key: string }>("key create", { account: "ops", name: "after-quiet-restart" });
    await waitForKey(gw, k.key, 10_000);
    const { data, response } = await sdk(A)
      .chat.completions.create({ model: MAIN, messages: [{ role: "user", content: "x" }] })
      .withResponse();
    expect(data.usage?.total_tokens).toBe(2000);
    // …and its usage settles through the new stream and consumer group.
    const id = response.headers.get("x-gateway-request-id")!;
    await eventually(
      () => prisma().usageLog.findMany({ where: { requestId: id } }),
      (rows) => rows.length === 1,
      15_000,
      200,
    );
    await expectLedgerMatchesBatches(prisma(), await prisma().usageLog.findMany({ where: { requestId: id } }));
  });
});

describe("Redis stopped and restarted under load", () => {
  it("keeps serving from the last snapshot, says how stale it is, and settles every usage event exactly once", async () => {
    const before = await balance();
    const ids: string[] = [];
    const failures: string[] = [];
    let stop = false;
    const worker = async (base: string) => {
      const c = sdk(base);
      while (!stop) {
        try {
          const { response } = await c.chat.completions
            .create({ model: MAIN, messages: [{ role: "user", content: "load" }] })
            .withResponse();
          ids.push(response.headers.get("x-gateway-request-id")!);
        } catch (e) {
          failures.push(String((e as Error).message));
        }
      }
    };
    const load = Promise.all([worker(A), worker(A), worker(A), worker(B), worker(B), worker(B)]);
    // Under way on both replicas before Redis goes.
    await eventually(
      async () => ids.length,
      (n) => n >= LOAD_CALLS,
      15_000,
      50,
    );
    const beforeOutage = ids.length;
    stopRedis();
    await eventually(
      async () => redisUp(),
      (up) => !up,
      5_000,
    );
    // Down long enough for /readyz to say the snapshot is stale, and calls served meanwhile.
    const readyDuring = await eventually(
      async () => (await (await fetch(`${A}/readyz`, OPS)).json()) as { status: string; snapshotAgeMs: number },
      (r) => r.snapshotAgeMs >= STALE_MS && ids.length - beforeOutage >= OUTAGE_CALLS,
      STALE_MS + 10_000,
      200,
    );
    const servedDuring = ids.length - beforeOutage;
    startRedis();
    await eventually(
      async () => redisUp(),
      (up) => up,
      10_000,
    );
    // Serving again with Redis back: the calls that end now settle through the new stream.
    const afterRestart = ids.length;
    await eventually(
      async () => ids.length,
      (n) => n >= afterRestart + LOAD_CALLS,
      15_000,
      50,
    );
    stop = true;
    await load;
    console.log(
      `redis outage: ${ids.length} calls served (${servedDuring} while Redis was down), ${failures.length} failed; /readyz during: ${JSON.stringify(readyDuring)}`,
    );
    expect(failures).toEqual([]);
    expect(servedDuring).toBeGreaterThan(0);
    expect(readyDuring.status).toBe("ready");
    expect(readyDuring.snapshotAgeMs).toBeGreaterThanOrEqual(STALE_MS);

    // Every successful call the clients saw is in the usage log exactly once (request ids are unique there),
    // each call's batch has ledger lines matching its rows, and the wallet moved by exactly the sum.
    const settled = await eventually(
      () => prisma().usageLog.count({ where: { requestId: { in: ids } } }),
      (n) => n === ids.length,
      60_000,
      500,
    );
    expect(settled).toBe(ids.length);
    const rows = await prisma().usageLog.findMany({ where: { requestId: { in: ids } } });
    expect(rows.every((r) => r.status === 200 && r.costMicro === COST)).toBe(true);
    const usageSum = rows.reduce((s, r) => s + r.costMicro, 0n);
    await expectLedgerMatchesBatches(prisma(), rows);
    expect(await balance()).toBe(before - usageSum);
    console.log(`redis outage: ${settled} usage events settled exactly once, ${usageSum} micro charged`);

    // Snapshots flow again after the restart: a key created now reaches both replicas, and /readyz is fresh.
    const fresh = await gw.admin<{ key: string }>("key create", { account: "ops", name: "after-restart" });
    await waitForKey(gw, fresh.key, 10_000);
    for (const base of gw.bases) {
      await eventually(
        async () => ((await (await fetch(`${base}/readyz`, OPS)).json()) as { snapshotAgeMs: number }).snapshotAgeMs,
        (age) => age < 2_500,
        10_000,
      );
    }
  });
});
