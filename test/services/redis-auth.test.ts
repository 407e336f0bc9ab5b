import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually, freePort, type Proc, startTs } from "../helpers/processes.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Issue 25, item 4a: production Redis requires credentials. A Redis of this file's own runs with requirepass
// and an ACL user; the distributed product works with the user and password in REDIS_URL (a key reaches the
// replica, a call settles), and a process given no credentials or a wrong password stops at once with one
// clear line that names no password, instead of retrying forever as if Redis were down.

const MODEL = "auth-chat-2025-01-01";
const PASSWORD = `pw-${randomBytes(12).toString("hex")}`;
const USER_PASSWORD = `user-${randomBytes(12).toString("hex")}`;
const WRONG = `wrong-${randomBytes(12).toString("hex")}`;
// docs/deployment.md, "Redis credentials", with the test gateway's prefix (mgtest:<random>:) for `modelgate:`
const PREFIX = "mgtest:";
const COMMON = `resetkeys ~${PREFIX}* resetchannels &${PREFIX}* -@all +@read +@write +@pubsub +@connection +@transaction +eval +evalsha +script|load +script|exists -@dangerous +info`;
const ACL_RULES = {
  "modelgate-control": COMMON,
  // a replica writes usage but never reads it as a consumer group, trims or deletes from streams
  "modelgate-replica": `${COMMON} -xreadgroup -xack -xgroup -xautoclaim -xclaim -xtrim -xdel`,
};
const METRICS_TOKEN = "redis-auth-metrics-token-0123456789";
const METRICS_AUTH = { authorization: `Bearer ${METRICS_TOKEN}` };
let redisPort: number;
let redisDir: string;
let upstream: MockUpstream;
let gw: Gateway;

const redisCli = (...args: string[]) =>
  execFileSync("redis-cli", ["-p", String(redisPort), ...args], {
    encoding: "utf8",
    env: { ...process.env, REDISCLI_AUTH: PASSWORD },
    stdio: ["ignore", "pipe", "ignore"],
  }).trim();

beforeAll(async () => {
  redisPort = await freePort();
  redisDir = mkdtempSync(join(tmpdir(), "mg-redis-auth-"));
  execFileSync("redis-server", [
    ...["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    ...["--daemonize", "yes", "--dir", redisDir, "--pidfile", join(redisDir, "redis.pid")],
    ...["--requirepass", PASSWORD],
  ]);
  await eventually(
    async () => {
      try {
        return redisCli("ping") === "PONG";
      } catch {
        return false;
      }
    },
    (up) => up,
    10_000,
  );
  // the ACL users docs/deployment.md describes, one per role, with its rules as written there
  for (const [user, rules] of Object.entries(ACL_RULES))
    redisCli("ACL", "SETUSER", user, "on", `>${USER_PASSWORD}`, ...rules.split(" "));
  upstream = await startOpenAIUpstream({
    fallback: { text: ["ok"], usage: { promptTokens: 10, completionTokens: 5 } },
  });
  gw = await startGateway("distributed", {
    redisUrl: `redis://modelgate-control:${USER_PASSWORD}@127.0.0.1:${redisPort}`,
    replicas: 1,
    replicaEnv: () => ({ REDIS_URL: `redis://modelgate-replica:${USER_PASSWORD}@127.0.0.1:${redisPort}` }),
    env: { LOG_LEVEL: "info", MODELGATE_METRICS_TOKEN: METRICS_TOKEN }, // /metrics needs it (issue 25)
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "mock", model: "m" }] }],
    },
  });
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  try {
    redisCli("shutdown", "nosave");
  } catch {
    /* gone */
  }
  await upstream?.close();
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
});

it("the distributed product runs on a Redis that requires a user and password in REDIS_URL, one ACL user per role", async () => {
  await gw.admin("account create", { name: "auth", balance: "10" });
  const { key } = await gw.admin<{ key: string }>("key create", { account: "auth", name: "k" });
  await waitForKey(gw, key);
  const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  const id = res.headers.get("x-gateway-request-id")!;
  await eventually(
    () => gw.usage("auth"),
    (rows) => rows.some((r) => r.requestId === id),
    20_000,
    100,
  );
  expect(await gw.balance("auth")).toBeLessThan(10_000_000n);
  for (const p of gw.procs) {
    expect(p.output()).not.toContain(USER_PASSWORD);
    expect(p.output()).not.toContain("carries no credentials");
    expect(p.output()).not.toContain("NOPERM");
  }
}, 60_000);

it("the replica's policy subscription is live under its ACL user: /readyz and the gauge say so", async () => {
  // Its liveness ping is a PUBLISH to a channel of its own under the prefix: the replica's ACL must allow it.
  const base = gw.bases[0]!;
  await eventually(
    async () =>
      (
        (await (await fetch(`${base}/readyz`, { headers: METRICS_AUTH })).json()) as {
          dependencies: Record<string, string>;
        }
      ).dependencies,
    (d) => d.policySubscription === "live",
    15_000,
    100,
  );
  const metrics = await (await fetch(`${base}/metrics`, { headers: METRICS_AUTH })).text();
  expect(metrics).toMatch(/^modelgate_policy_subscription_live 1$/m);
});

/** Starts `entry` against the test's Redis with `url`; resolves with its exit code and output once it exits. */
async function exitOf(
  entry: string,
  url: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string; ms: number }> {
  const started = Date.now();
  const proc: Proc = startTs(entry, { ...gw.cliEnv, ...env, REDIS_URL: url, LOG_LEVEL: "info" });
  const code = await new Promise<number | null>((resolve) => {
    if (proc.child.exitCode !== null) resolve(proc.child.exitCode);
    proc.child.once("exit", (c) => resolve(c));
    setTimeout(() => resolve(null), 30_000).unref();
  });
  if (code === null) await proc.stop("SIGKILL");
  return { code, out: proc.output(), ms: Date.now() - started };
}

it("a control plane without credentials, or a replica with a wrong password, stops with one clear line", async () => {
  const cpPort = await freePort();
  const cp = await exitOf("control-plane/src/main/control-plane.ts", `redis://127.0.0.1:${redisPort}`, {
    PORT: String(cpPort),
  });
  expect(cp.code, cp.out).toBe(2);
  expect(cp.out).toContain("carries no credentials");
  expect(cp.out).toContain("Redis refused the control plane's credentials");
  expect(cp.out).toContain("NOAUTH");

  const dpPort = await freePort();
  const dp = await exitOf("data-plane/src/main.ts", `redis://modelgate-replica:${WRONG}@127.0.0.1:${redisPort}`, {
    PORT: String(dpPort),
    DATABASE_URL: "",
    MODELGATE_SPOOL_DIR: join(redisDir, "spool-wrong"),
  });
  expect(dp.code, dp.out).toBe(2);
  expect(dp.out).toContain("Redis refused this replica's credentials");
  expect(dp.out).toContain("WRONGPASS");
  // the password it was given appears nowhere in what it wrote (ioredis' errors carry a refused AUTH's argument)
  expect(dp.out).not.toContain(WRONG);
  expect(dp.out).not.toContain("carries no credentials");
}, 120_000);
