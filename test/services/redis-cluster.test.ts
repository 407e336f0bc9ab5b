import { hostname } from "node:os";
import { Redis } from "ioredis";
import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { POLICY_SHARDS } from "../../data-plane/src/contract/policy-feed.ts";
import { redisNames, usageShard, usageShardFor } from "../../data-plane/src/contract/redis-names.ts";
import { fullLease } from "../../control-plane/src/snapshot/redis-bus.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startRedisCluster, type TestRedisCluster } from "../helpers/redis-cluster.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Issue 13, part 3: both planes on a Redis Cluster (three masters with a replica each, started for this
// file) through `REDIS_URL=redis+cluster://…`, the usage stream in three shards. Policy reaches both
// replicas, they hold one rate limit, and usage settles exactly once; then a master is killed under load
// (its replica takes over): every answered call is charged once, none is lost, none twice. The policy feed's
// shards (keys and accounts) spread over all three masters; its head and stream stay in `{ctl}`.

const MODEL = "gpt-4o-mini-2024-07-18";
const UPSTREAM_KEY = "sk-upstream-cluster";
// Per 1M tokens: input 1, output 2; the mock answers 1000 + 1000 tokens: 3000 micro-units a call.
const COST = 3000n;
const SHARDS = 3;

let cluster: TestRedisCluster;
let mock: OpenAIMock;
let gw: Gateway;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  mock = await startOpenAIMock(UPSTREAM_KEY);
  mock.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
  gw = await startGateway("distributed", {
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: mock.url, apiKey: "${CLUSTER_UPSTREAM_KEY}" }],
      models: [{ id: MODEL, price: { input: 1, output: 2 }, routes: [{ upstream: "mock", model: "gpt-4o-mini" }] }],
    },
    redisUrl: cluster.url,
    env: { CLUSTER_UPSTREAM_KEY: UPSTREAM_KEY, MODELGATE_USAGE_SHARDS: String(SHARDS) },
  });
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
  await cluster?.close();
});

const sdk = (key: string, base: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const ask = (c: OpenAI) =>
  c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] }).withResponse();

it("serves, limits and settles on a cluster: one rpm limit over two replicas, a revocation seen by both", async () => {
  const LIMIT = 40;
  await gw.admin("account create", { name: "cl", balance: "100" });
  const start = await gw.balance("cl");
  const k = await gw.admin<{ id: string; key: string }>("key create", {
    account: "cl",
    name: "shared",
    rpm: String(LIMIT),
  });
  await waitForKey(gw, k.key);
  const clients = gw.bases.map((b) => sdk(k.key, b));
  const answered: string[] = [];
  let limited = 0;
  for (let i = 0; i < 2 * LIMIT; i++) {
    try {
      answered.push((await ask(clients[i % 2]!)).response.headers.get("x-gateway-request-id")!);
    } catch (e) {
      if ((e as { code?: string }).code !== "rate_limit_exceeded") throw e;
      limited++;
    }
  }
  // Sequential calls over a few seconds: the burst, plus at most one per 1.5 s regained meanwhile.
  expect(answered.length).toBeGreaterThanOrEqual(LIMIT);
  expect(answered.length).toBeLessThanOrEqual(LIMIT + 5);
  expect(limited).toBe(2 * LIMIT - answered.length);

  const expected = start - BigInt(answered.length) * COST;
  await eventually(
    () => gw.balance("cl"),
    (b) => b <= expected,
    20_000,
  );
  const rows = (await gw.usage("cl")).filter((r) => r.status === 200);
  expect(rows.map((r) => r.requestId).sort()).toEqual([...answered].sort());
  expect(await gw.balance("cl")).toBe(expected);

  await gw.admin("key revoke", { id: k.id });
  for (const base of gw.bases) {
    await eventually(
      async () =>
        (await fetch(`${base}/v1/models/no-such-model-2000-01-01`, { headers: { authorization: `Bearer ${k.key}` } }))
          .status,
      (s) => s === 401,
      5_000,
      20,
    );
  }
});

it("spreads the policy feed's shards over all three masters, its head and stream in one slot", async () => {
  const names = redisNames(gw.cliEnv.MODELGATE_REDIS_PREFIX!);
  // 200 accounts at once (so their shards are many): the triggers record them, the control plane publishes them.
  const ACCOUNTS = 200;
  await gw.prisma!.$executeRawUnsafe(
    `INSERT INTO accounts (id, name, balance_micro, updated_at) SELECT gen_random_uuid(), 'spread-' || n, 1000, now() FROM generate_series(1, ${ACCOUNTS}) n`,
  );
  await cluster.client.publish(names.changedChannel, "test");
  const masters = cluster.client.nodes("master");
  expect(masters.length).toBe(3);
  /** every shard hash of the feed (any epoch) held by each master, and how many accounts they hold in all */
  const perMaster = async () => {
    const found = await Promise.all(
      masters.map(async (m) => {
        const keys: string[] = [];
        let cursor = "0";
        do {
          const [next, batch] = await m.scan(cursor, "MATCH", `${names.prefix}{policy:*`, "COUNT", 1000);
          cursor = next;
          keys.push(...batch);
        } while (cursor !== "0");
        return keys;
      }),
    );
    const epoch = (await cluster.client.hget(names.policyMeta, "epoch"))!;
    const accountShards = found.flat().filter((k) => k.startsWith(`${names.prefix}{policy:${epoch}:a:`));
    let accounts = 0;
    for (const k of accountShards) accounts += await cluster.client.hlen(k);
    return { counts: found.map((keys) => keys.length), accounts, epoch };
  };
  const { counts, epoch } = await eventually(perMaster, (r) => r.accounts >= ACCOUNTS, 20_000, 100);
  // ~200 accounts fill ~140 of the 256 account shards: each master holds about a third (none holds them all).
  for (const n of counts) expect(n).toBeGreaterThan(10);

  // Every shard name of the epoch, by the master serving its slot: about a third each.
  const slots = await cluster.client.cluster("SLOTS");
  const byMaster = new Map<number, number>();
  for (const kind of ["key", "account"] as const)
    for (let s = 0; s < POLICY_SHARDS; s++) {
      const slot = Number(await cluster.client.cluster("KEYSLOT", names.policyShard(epoch, kind, s)));
      const port = slots.find(([from, to]) => slot >= from && slot <= to)![2]![1];
      byMaster.set(port, (byMaster.get(port) ?? 0) + 1);
    }
  expect(byMaster.size).toBe(3);
  for (const n of byMaster.values()) expect(n).toBeGreaterThan(100);

  // The head, the stream, the catalog and the full publication lease (the commit script checks it) share one slot: `{ctl}`.
  const ctl = await cluster.client.cluster("KEYSLOT", names.policyMeta);
  for (const key of [names.policyStream(epoch), names.policyCatalog(epoch), names.controlHeartbeat, fullLease(names)])
    expect(await cluster.client.cluster("KEYSLOT", key)).toBe(ctl);
});

it("a master killed under load: its replica takes over, and every answered call is charged exactly once", async () => {
  await gw.admin("account create", { name: "failover", balance: "1000" });
  const start = await gw.balance("failover");
  const k = await gw.admin<{ id: string; key: string }>("key create", { account: "failover", name: "load" });
  await waitForKey(gw, k.key);
  // The master that holds replica 0's usage shard (its identity is host:pid:port, see data-plane main.ts).
  const dp = gw.procs[1]!; // procs: control plane, then the replicas in order
  const shard = usageShardFor(`${hostname()}:${dp.child.pid}:${new URL(gw.bases[0]!).port}`, SHARDS);
  const { master, replica } = await cluster.ownerOf(usageShard(gw.cliEnv.MODELGATE_REDIS_PREFIX!, shard));

  const clients = gw.bases.map((b) => sdk(k.key, b));
  const answered: string[] = [];
  const failed: string[] = [];
  let stop = false;
  let sent = 0;
  const load = Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!stop) {
        const i = sent++;
        try {
          answered.push((await ask(clients[i % 2]!)).response.headers.get("x-gateway-request-id")!);
        } catch (e) {
          failed.push(String((e as { code?: string }).code ?? e));
        }
      }
    }),
  );
  await eventually(
    async () => answered.length,
    (n) => n >= 100,
    20_000,
    20,
  );
  master.proc.kill("SIGKILL");
  // The replica is promoted once the others see the master fail (cluster-node-timeout 1 s).
  await eventually(
    () => roleOf(replica.port),
    (role) => role === "master",
    20_000,
    100,
  );
  const atPromotion = answered.length;
  await eventually(
    async () => answered.length,
    (n) => n >= atPromotion + 100,
    30_000,
    20,
  );
  stop = true;
  await load;
  console.log(
    `cluster failover: ${answered.length} answered, ${failed.length} failed (${[...new Set(failed)].join(", ")}), ${atPromotion} before the promotion`,
  );

  // Every answered call charged once: one usage row per request id, the wallet moved by exactly their sum.
  const expected = start - BigInt(answered.length) * COST;
  await eventually(
    () => gw.balance("failover"),
    (b) => b <= expected,
    60_000,
    200,
  );
  const rows = (await gw.usage("failover", 100_000)).filter((r) => r.status === 200);
  const ids = rows.map((r) => r.requestId);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.sort()).toEqual([...answered].sort());
  expect(await gw.balance("failover")).toBe(expected);
});

/** The ROLE of the node on `port` ("master" once promoted). */
async function roleOf(port: number): Promise<string> {
  const r = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    const role = (await r.call("ROLE")) as unknown[];
    return String(role[0]);
  } catch {
    return "";
  } finally {
    r.disconnect();
  }
}
