import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, type Role, startGateway, waitForKey } from "../helpers/gateway.ts";
import { type Network, startNetwork } from "../helpers/netns.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Issue 13, part 4: the planes on hosts of their own. The control plane and two data planes each run in a
// network namespace of their own (test/helpers/netns.ts), reaching Postgres, Redis and the upstream only
// across a veth pair; the test reaches the data planes at their namespace addresses. Across those links the
// two replicas hold one shared rate limit, both refuse a revoked key within a second, and every answered
// call is settled exactly once.

const MODEL = "gpt-4o-mini-2024-07-18";
const UPSTREAM_KEY = "sk-upstream-hosts";
// Per 1M tokens: input 1, output 2; the mock answers 1000 + 1000 tokens: 3000 micro-units a call.
const COST = 3000n;

let net: Network;
let mock: OpenAIMock;
let gw: Gateway;

beforeAll(async () => {
  net = await startNetwork(3);
  mock = await startOpenAIMock(UPSTREAM_KEY);
  mock.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
  const forwarded = new Map<number, number>();
  for (const port of [5432, 6379, Number(new URL(mock.url).port)]) forwarded.set(port, await net.forward(port));
  /** a 127.0.0.1 URL as a process in a namespace reaches it: the hub address and the forwarder's port */
  const across = (url: string): string => {
    const u = new URL(url);
    const port = forwarded.get(Number(u.port));
    if (u.hostname !== "127.0.0.1" || port === undefined) throw new Error(`no forwarder for ${url}`);
    u.hostname = net.hub;
    u.port = String(port);
    return u.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
  };
  const hostOf = (role: Role) => net.hosts[role === "control-plane" ? 0 : role.replica + 1]!;
  gw = await startGateway("distributed", {
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: across(mock.url), apiKey: "${HOSTS_UPSTREAM_KEY}" }],
      models: [{ id: MODEL, price: { input: 1, output: 2 }, routes: [{ upstream: "mock", model: "gpt-4o-mini" }] }],
    },
    env: { HOSTS_UPSTREAM_KEY: UPSTREAM_KEY },
    placement: {
      prefix: (role) => hostOf(role).prefix,
      host: (role) => hostOf(role).address,
      url: (_role, url) => across(url),
    },
  });
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
  await net?.close();
});

it("runs each plane on a host of its own, reached only across the links", () => {
  expect(gw.bases.map((b) => new URL(b).hostname)).toEqual([net.hosts[1]!.address, net.hosts[2]!.address]);
  expect(new URL(gw.controlPlaneBase).hostname).toBe(net.hosts[0]!.address);
  // Postgres, Redis and the upstream were all reached through the forwarders on the hub, nothing else.
  expect(net.bytes()).toBeGreaterThan(0);
});

it("two replicas on two hosts hold one rpm limit, and settle every answered call exactly once", async () => {
  const LIMIT = 60;
  await gw.admin("account create", { name: "hosts", balance: "100" });
  const start = await gw.balance("hosts");
  const k = await gw.admin<{ id: string; key: string }>("key create", {
    account: "hosts",
    name: "shared",
    rpm: String(LIMIT),
  });
  await waitForKey(gw, k.key);
  const clients = gw.bases.map((b) => new OpenAI({ baseURL: `${b}/v1`, apiKey: k.key, maxRetries: 0 }));
  const answered: string[] = [];
  let limited = 0;
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < 2 * LIMIT) {
        const i = next++;
        try {
          const { data, response } = await clients[i % 2]!.chat.completions.create({
            model: MODEL,
            messages: [{ role: "user", content: "hi" }],
          }).withResponse();
          expect(data.usage?.completion_tokens).toBe(1000);
          answered.push(response.headers.get("x-gateway-request-id")!);
        } catch (e) {
          if ((e as { code?: string }).code !== "rate_limit_exceeded") throw e;
          limited++;
        }
      }
    }),
  );
  const elapsed = Date.now() - started;
  const ideal = LIMIT + Math.floor((elapsed * LIMIT) / 60_000); // GCRA: the burst, then one per second
  console.log(
    `other hosts: rpm ${LIMIT} over 2 replicas in 2 namespaces: ${answered.length} served, ${limited} refused in ${elapsed} ms (ideal ≤ ${ideal})`,
  );
  expect(answered.length + limited).toBe(2 * LIMIT);
  expect(answered.length).toBeGreaterThanOrEqual(Math.floor(LIMIT * 0.95));
  expect(answered.length).toBeLessThanOrEqual(Math.ceil(ideal + LIMIT * 0.05));

  // Settled exactly once: one usage row per answered call, none twice, and the wallet moved by their sum.
  const expected = start - BigInt(answered.length) * COST;
  await eventually(
    () => gw.balance("hosts"),
    (b) => b <= expected,
    20_000,
  );
  const rows = await gw.usage("hosts");
  const ok = rows.filter((r) => r.status === 200);
  expect(ok.map((r) => r.requestId).sort()).toEqual([...answered].sort());
  expect(ok.every((r) => r.costMicro === COST)).toBe(true);
  expect(await gw.balance("hosts")).toBe(expected);
});

it("both replicas refuse a revoked key within a second", async () => {
  await gw.admin("account create", { name: "revoke", balance: "10" });
  const latencies: number[] = [];
  for (let round = 0; round < 5; round++) {
    const k = await gw.admin<{ id: string; key: string }>("key create", { account: "revoke", name: `r${round}` });
    await waitForKey(gw, k.key);
    const revoked = Date.now();
    await gw.admin("key revoke", { id: k.id });
    // Poll every replica until it answers 401 for the key (a refused model lookup costs the key nothing).
    const refusedAfter = await Promise.all(
      gw.bases.map(async (base) => {
        await eventually(
          async () =>
            (
              await fetch(`${base}/v1/models/no-such-model-2000-01-01`, {
                headers: { authorization: `Bearer ${k.key}` },
              })
            ).status,
          (status) => status === 401,
          5_000,
          10,
        );
        return Date.now() - revoked;
      }),
    );
    latencies.push(Math.max(...refusedAfter));
  }
  console.log(`other hosts: revoked key refused by both replicas after ${latencies.join(", ")} ms`);
  expect(Math.max(...latencies)).toBeLessThan(1_000);
});
