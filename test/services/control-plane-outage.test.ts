import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { eventually, freePort } from "../helpers/processes.ts";

// Issue 25, item 18: the control plane logged every reconnect (81 `redis error` warnings in a 20 s outage, plus
// MaxRetriesPerRequestError and NOGROUP errors), and after SIGTERM with Redis down it took ~11 s to exit. Now
// it logs an outage as the replicas do (once when it starts, a summary per interval, once when it ends),
// recreates the usage consumer group quietly when Redis comes back empty, and bounds its shutdown. On a Redis
// of this file's own (the shared one must not be stopped).

const SHUTDOWN_MS = 3_000;
/** outage summaries (one a second, MODELGATE_LOG_SUMMARY_MS) the control plane must have logged before Redis is back */
const SUMMARIES = 4;
let redisPort: number;
let redisDir: string;
let gw: Gateway;

const redisCli = (...args: string[]) =>
  execFileSync("redis-cli", ["-p", String(redisPort), ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  }).trim();
const startRedis = () =>
  execFileSync("redis-server", [
    ...["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    ...["--daemonize", "yes", "--dir", redisDir, "--pidfile", join(redisDir, "redis.pid")],
  ]);
const redisUp = () => {
  try {
    return redisCli("ping") === "PONG";
  } catch {
    return false;
  }
};
const stopRedis = () => {
  try {
    redisCli("shutdown", "nosave");
  } catch {
    /* gone */
  }
};
const waitRedis = (up: boolean) =>
  eventually(
    async () => redisUp(),
    (u) => u === up,
    10_000,
    50,
  );

interface Line {
  level: number;
  msg: string;
  err?: unknown;
}
const cpLines = (): Line[] =>
  gw.procs[0]!.output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Line);

beforeAll(async () => {
  redisPort = await freePort();
  redisDir = mkdtempSync(join(tmpdir(), "mg-cp-outage-"));
  startRedis();
  await waitRedis(true);
  gw = await startGateway("distributed", {
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    replicas: 0,
    env: { LOG_LEVEL: "info", MODELGATE_LOG_SUMMARY_MS: "1000", MODELGATE_SHUTDOWN_MS: String(SHUTDOWN_MS) },
    config: { upstreams: [], models: [] },
  });
}, 180_000);

afterAll(async () => {
  if (redisPort && !redisUp()) startRedis();
  await gw?.stop();
  stopRedis();
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
});

it("a Redis outage is a handful of control-plane log lines; Redis back empty gets its consumer group back quietly", async () => {
  const stream = `${gw.cliEnv.MODELGATE_REDIS_PREFIX}usage`;
  await eventually(
    async () => redisCli("XINFO", "GROUPS", stream),
    (groups) => groups.includes("modelgate-settlers"),
    10_000,
  );
  const before = cpLines().length;
  stopRedis();
  await waitRedis(false);
  const started = Date.now();
  // Several seconds of outage, the reconnects, the consumer's reads, the heartbeat and the alert runner all
  // failing: until that many summaries say so.
  await eventually(
    async () => cpLines().slice(before),
    (lines) => lines.filter((l) => l.msg === "redis still unavailable").length >= SUMMARIES,
    SUMMARIES * 1_000 + 10_000,
  );
  const seconds = (Date.now() - started) / 1000;
  const during = cpLines().slice(before);
  startRedis(); // empty: no stream, no group
  await waitRedis(true);
  await eventually(
    async () => cpLines().slice(before),
    (lines) => lines.some((l) => l.msg === "redis available again"),
    20_000,
  );
  // the consumer group is back (recreated when the reads found it gone) and nothing says NOGROUP
  await eventually(
    async () => {
      try {
        return redisCli("XINFO", "GROUPS", stream);
      } catch {
        return "";
      }
    },
    (groups) => groups.includes("modelgate-settlers"),
    15_000,
  );
  const lines = cpLines().slice(before);
  const warnings = during.filter((l) => l.level >= 40);
  console.log(
    `control plane, ${seconds.toFixed(1)} s outage: ${warnings.length} warning lines: ${warnings.map((l) => l.msg).join(" | ")}`,
  );
  // the change of state, one summary a second, a little slack for the reconnect
  expect(warnings.length, JSON.stringify(warnings.map((l) => l.msg))).toBeLessThanOrEqual(Math.ceil(seconds) + 4);
  expect(lines.filter((l) => l.msg.startsWith("redis unavailable"))).toHaveLength(1);
  expect(lines.filter((l) => l.msg === "redis error")).toHaveLength(0);
  expect(lines.filter((l) => l.msg === "redis available again")).toHaveLength(1);
  expect(lines.filter((l) => JSON.stringify(l).includes("NOGROUP"))).toEqual([]);
  expect(lines.filter((l) => JSON.stringify(l).includes("MaxRetriesPerRequest"))).toEqual([]);
}, 90_000);

it(`SIGTERM while Redis is down exits within the shutdown bound (MODELGATE_SHUTDOWN_MS=${SHUTDOWN_MS})`, async () => {
  const before = cpLines().length;
  stopRedis();
  await waitRedis(false);
  // let the outage set in: the control plane has seen it (connections failing, the consumer's reads waiting)
  await eventually(
    async () => cpLines().slice(before),
    (lines) => lines.some((l) => l.level >= 40),
    10_000,
  );
  const t0 = Date.now();
  await gw.procs[0]!.stop("SIGTERM");
  const ms = Date.now() - t0;
  console.log(`control plane exit with Redis down: ${ms} ms`);
  // the bound plus a process's own exit on a loaded machine (it took ~11 s before)
  expect(ms).toBeLessThan(SHUTDOWN_MS + 2_000);
}, 60_000);
