import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually, freePort } from "../helpers/processes.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Issue 12, item 16: while Redis was down each replica wrote about 7,700 warning lines in 20 s (about five per
// request) plus an error every second. Now the outage is one line when it starts, one summary line per
// MODELGATE_LOG_SUMMARY_MS while it lasts, and one line when Redis is back. Counted here on a replica of a
// Redis of this file's own, stopped under traffic.

const MODEL = "storm-chat-2025-01-01";
let redisPort: number;
let redisDir: string;
let upstream: MockUpstream;
let gw: Gateway;
let key: string;

const redisCli = (...args: string[]) =>
  execFileSync("redis-cli", ["-p", String(redisPort), ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  }).trim();
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
  ]);
const redisUp = () => {
  try {
    return redisCli("ping") === "PONG";
  } catch {
    return false;
  }
};

beforeAll(async () => {
  redisPort = await freePort();
  redisDir = mkdtempSync(join(tmpdir(), "mg-storm-"));
  startRedis();
  await eventually(
    async () => redisUp(),
    (up) => up,
    10_000,
  );
  upstream = await startOpenAIUpstream({ fallback: { text: ["ok"] } });
  gw = await startGateway("distributed", {
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    replicas: 1,
    env: { LOG_LEVEL: "info", MODELGATE_LOG_SUMMARY_MS: "1000" },
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "mock", model: "m" }] }],
    },
  });
  await gw.admin("account create", { name: "storm", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "storm", name: "k" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  if (redisPort && !redisUp()) startRedis();
  await gw?.stop();
  try {
    redisCli("shutdown", "nosave");
  } catch {
    /* gone */
  }
  await upstream?.close();
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
});

const replicaLines = () =>
  gw.procs[1]!.output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string });

it("a Redis outage under traffic is a handful of log lines, not several per request", async () => {
  const before = replicaLines().length;
  redisCli("shutdown", "nosave");
  const started = Date.now();
  let answered = 0;
  // About 3 s of traffic, 8 at a time, while Redis is away.
  while (Date.now() - started < 3_000) {
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${gw.bases[0]}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
        }).then((r) => r.status),
      ),
    );
    answered += results.filter((s) => s === 200).length;
  }
  const seconds = (Date.now() - started) / 1000;
  startRedis();
  await eventually(
    // Only lines written since the outage began: a reconnect at start-up may have logged one already.
    async () =>
      replicaLines()
        .slice(before)
        .some((l) => l.msg === "redis available again"),
    (ok) => ok,
    15_000,
  );
  const lines = replicaLines().slice(before);
  expect(answered).toBeGreaterThan(50); // served from the last snapshot all along
  const warnings = lines.filter((l) => l.level >= 40);
  // One line for the change of state, one summary a second, a little slack for the reconnect.
  expect(warnings.length, JSON.stringify(warnings.map((l) => l.msg))).toBeLessThanOrEqual(Math.ceil(seconds) + 6);
  expect(warnings.filter((l) => l.msg.startsWith("redis unavailable"))).toHaveLength(1);
  // The spool's replays (every second) find Redis away too: counted in the summary, not a line each.
  expect(lines.filter((l) => l.msg === "usage spool error")).toHaveLength(0);
  expect(lines.filter((l) => l.msg === "redis available again")).toHaveLength(1);
  console.log(
    `redis outage: ${answered} calls in ${seconds.toFixed(1)} s, ${warnings.length} warning lines (${lines.length} lines in all)`,
  );
});
