import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Issue 12, item 18: a replica killed with SIGKILL lost the charges of its last answers (0 to 38 per kill):
// their usage events waited in memory for a 5 ms batch window. Now an answer's last byte goes out only once
// its usage event is in Redis (or the local spool), so every answer a client received in full is charged.
// Bounded: a few kills under steady load, well under a minute.

const MODEL = "kill-chat-2025-01-01";
const KILLS = 4;
let upstream: MockUpstream;
let gw: Gateway;
let replica: Proc | null = null;
let base: string;
let env: NodeJS.ProcessEnv;
let key: string;
/** resolves once the replica answers again after a kill: clients that lost their call wait for it */
let replicaUp: Promise<void> = Promise.resolve();

async function startReplica(): Promise<void> {
  replica = startTs("data-plane/src/main.ts", env);
  await waitForHttp(`${base}/readyz`, replica, 60_000);
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({
    fallback: { text: ["charged"], usage: { promptTokens: 10, completionTokens: 5 } },
  });
  gw = await startGateway("distributed", {
    replicas: 0,
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "mock", model: "m" }] }],
    },
  });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    ...gw.cliEnv,
    DATABASE_URL: "",
    PORT: String(port),
    MODELGATE_SPOOL_DIR: join(gw.cliEnv.MODELGATE_DATA_DIR!, `spool-kill-${randomBytes(3).toString("hex")}`),
  };
  await startReplica();
  await gw.admin("account create", { name: "kill", balance: "1000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "kill", name: "k" })).key;
  await eventually(
    async () => (await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status,
    (s) => s === 200,
    10_000,
    50,
  );
}, 180_000);

afterAll(async () => {
  await replica?.stop();
  await gw?.stop();
  await upstream?.close();
});

it(`no answered call goes uncharged across ${KILLS} SIGKILLs under load`, async () => {
  const answered: string[] = [];
  let stopped = false;
  // 16 clients in a loop; a call counts as answered only when its whole body arrived.
  const client = async () => {
    while (!stopped) {
      try {
        const stream = answered.length % 3 === 0;
        const res = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, stream, messages: [{ role: "user", content: "hi" }] }),
        });
        const text = await res.text();
        const complete = stream ? text.trimEnd().endsWith("data: [DONE]") : text.endsWith("}");
        if (res.status === 200 && complete) answered.push(res.headers.get("x-gateway-request-id")!);
      } catch {
        await replicaUp; // the replica is down: try again once it is back
      }
    }
  };
  const clients = Array.from({ length: 16 }, client);
  for (let i = 0; i < KILLS; i++) {
    const before = answered.length;
    await eventually(
      async () => answered.length,
      (n) => n >= before + 150,
      20_000,
      10,
    );
    let up!: () => void;
    replicaUp = new Promise((r) => (up = r));
    await replica!.stop("SIGKILL");
    await startReplica();
    up();
  }
  await eventually(
    async () => answered.length,
    (n) => n >= 150 * (KILLS + 1),
    20_000,
    10,
  );
  stopped = true;
  await Promise.all(clients);
  // Everything answered is settled, spooled events included (the last replica replays what its
  // predecessors spooled, and Redis kept what they wrote).
  const ids = new Set(answered);
  const settled = await eventually(
    async () =>
      new Set(
        (
          await gw.prisma!.usageLog.findMany({ where: { requestId: { in: [...ids] } }, select: { requestId: true } })
        ).map((r) => r.requestId),
      ),
    (s) => s.size === ids.size,
    30_000,
    250,
  ).catch(
    async () =>
      new Set(
        (
          await gw.prisma!.usageLog.findMany({ where: { requestId: { in: [...ids] } }, select: { requestId: true } })
        ).map((r) => r.requestId),
      ),
  );
  const missing = [...ids].filter((id) => !settled.has(id));
  console.log(`kill loop: ${KILLS} SIGKILLs, ${ids.size} answered calls, ${missing.length} uncharged`);
  expect(missing).toEqual([]);
  expect(await gw.prisma!.usageLog.count({ where: { requestId: { in: [...ids] } } })).toBe(ids.size); // no double charge
});
