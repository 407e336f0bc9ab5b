import { Redis } from "ioredis";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisNames } from "../../data-plane/src/contract/redis-names.ts";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Issue 13: policy travels as changes. Two replicas follow the feed: a revoked key is refused and a created key
// served by both within a second; a bulk change (tens of thousands of keys) reaches them as changes, without a
// full load; and a full reload (an operator's republication) is done while both replicas keep serving.

const MODEL = "gpt-4o-mini-2024-07-18";
const UPSTREAM_KEY = "sk-upstream-feed";
const BULK = 30_000;
let gw: Gateway;
let mock: OpenAIMock;
let redis: Redis;

interface Readyz {
  status: string;
  policy: { keys: number; accounts: number; loading: boolean; fullLoads: number; lastFullLoadMs: number | null };
}
const readyz = async (base: string) => (await (await fetch(`${base}/readyz`)).json()) as Readyz;
const sdk = (key: string, base: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const ask = (key: string, base: string) =>
  sdk(key, base)
    .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
    .then(
      () => "served",
      (e: unknown) => (e instanceof OpenAI.AuthenticationError ? "refused" : String(e)),
    );

beforeAll(async () => {
  mock = await startOpenAIMock(UPSTREAM_KEY);
  mock.fallback = { content: "fine", promptTokens: 10, completionTokens: 10 };
  gw = await startGateway("distributed", {
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: mock.url, apiKey: "${FEED_UPSTREAM_KEY}" }],
      models: [
        {
          id: MODEL,
          reasoning: false,
          price: { input: 1, output: 2 },
          routes: [{ upstream: "mock", model: "gpt-4o-mini", weight: 1 }],
        },
      ],
    },
    env: { FEED_UPSTREAM_KEY: UPSTREAM_KEY },
  });
  redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379");
  await gw.admin("account create", { name: "feed", balance: "1000" });
}, 180_000);

afterAll(async () => {
  redis?.disconnect();
  await gw?.stop();
  await mock?.close();
});

/**
 * What a replica's policy says of a key, without an upstream call (so only policy propagation is timed): a
 * model that does not exist is refused 401 for an unknown or revoked key, and 404 for a key it accepts.
 */
const policyOf = async (key: string, base: string) => {
  const res = await fetch(`${base}/v1/models/no-such-model-2000-01-01`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const code = ((await res.json()) as { error?: { code?: string } }).error?.code;
  return code === "invalid_api_key" ? "unknown" : code === "key_revoked" ? "refused" : "accepted";
};

/** Milliseconds until every replica's policy says `want` of the key (polled every 10 ms, at most `limit`). */
async function untilEvery(key: string, want: string, limit = 3_000): Promise<number> {
  const t0 = Date.now();
  await Promise.all(
    gw.bases.map((base) =>
      eventually(
        () => policyOf(key, base),
        (v) => v === want,
        limit,
        10,
      ),
    ),
  );
  return Date.now() - t0;
}

describe("policy changes reach every replica", () => {
  it("a created key is served, and once revoked refused, by both replicas within a second", async () => {
    for (let i = 0; i < 3; i++) {
      const k = await gw.admin<{ id: string; key: string }>("key create", { account: "feed", name: `k${i}` });
      expect(await untilEvery(k.key, "accepted")).toBeLessThan(1_000);
      for (const base of gw.bases) expect(await ask(k.key, base)).toBe("served");
      await gw.admin("key revoke", { id: k.id });
      expect(await untilEvery(k.key, "refused")).toBeLessThan(1_000);
      for (const base of gw.bases) expect(await ask(k.key, base)).toBe("refused");
    }
  });

  it("a bulk insert of tens of thousands of keys reaches both replicas as changes, and a revocation meanwhile within a second", async () => {
    const before = await Promise.all(gw.bases.map(readyz));
    const k = await gw.admin<{ id: string; key: string }>("key create", { account: "feed", name: "during-bulk" });
    await untilEvery(k.key, "accepted");
    const [account] = await gw.prisma!.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM accounts WHERE name = 'feed'`,
    );
    await gw.prisma!.$executeRawUnsafe(
      `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at)
       SELECT gen_random_uuid(), $1::uuid, 'bulk-' || i, md5(i::text) || md5((i + 1)::text), 'sk-mg-bulk', '{}', '{}', now()
       FROM generate_series(1, ${BULK}) i`,
      account!.id,
    );
    await redis.publish(redisNames(gw.cliEnv.MODELGATE_REDIS_PREFIX).changedChannel, "bulk");
    // Once the bulk's first pages arrive (its read began), the key is revoked: refused by both replicas within a
    // second, though the bulk may still be on its way (read between its pages).
    await eventually(
      () => readyz(gw.bases[0]!),
      (s) => s.policy.keys > before[0]!.policy.keys + 1,
      30_000,
      5,
    );
    await gw.prisma!.$executeRawUnsafe(
      `UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1::uuid`,
      k.id,
    );
    await redis.publish(redisNames(gw.cliEnv.MODELGATE_REDIS_PREFIX).changedChannel, "revoke");
    const refusedMs = await untilEvery(k.key, "refused");
    const midway = await Promise.all(gw.bases.map(readyz));
    console.log(
      `revocation during a bulk of ${BULK}: refused by both after ${refusedMs} ms; keys held then: ${midway.map((s) => s.policy.keys).join(" / ")}`,
    );
    expect(refusedMs).toBeLessThan(1_000);
    await eventually(
      () => Promise.all(gw.bases.map(readyz)),
      (states) => states.every((s, i) => s.policy.keys >= before[i]!.policy.keys + 1 + BULK),
      60_000,
      50,
    );
    const after = await Promise.all(gw.bases.map(readyz));
    expect(after.map((s) => s.policy.fullLoads)).toEqual(before.map((s) => s.policy.fullLoads));
  });

  it("a replica keeps serving while it reloads tens of thousands of keys in full (an operator's republication)", async () => {
    // (its own account: "feed" holds the bulk, past an account's key limit)
    await gw.admin("account create", { name: "feed-reload", balance: "1000" });
    const k = await gw.admin<{ id: string; key: string }>("key create", { account: "feed-reload", name: "steady" });
    await untilEvery(k.key, "accepted");
    const before = await Promise.all(gw.bases.map(readyz));
    expect(before[0]!.policy.keys).toBeGreaterThanOrEqual(BULK + 1);
    // A new epoch, written beside the current one: each replica loads it while serving from what it holds.
    await redis.publish(redisNames(gw.cliEnv.MODELGATE_REDIS_PREFIX).changedChannel, "republish");
    const outcomes: string[] = [];
    let sawLoading = false;
    let done = false;
    const callers = gw.bases.map(async (base) => {
      while (!done) outcomes.push(await ask(k.key, base));
    });
    // Until every replica has loaded the new epoch, noting whether one was seen loading on the way.
    await eventually(
      async () => {
        const states = await Promise.all(gw.bases.map(readyz));
        if (states.some((s) => s.policy.loading)) sawLoading = true;
        return states;
      },
      (states) => states.every((s, i) => s.policy.fullLoads > before[i]!.policy.fullLoads && !s.policy.loading),
      60_000,
      5,
    ).finally(() => (done = true));
    await Promise.all(callers);
    const after = await Promise.all(gw.bases.map(readyz));
    for (const s of after) {
      expect(s.policy.keys).toBe(before[0]!.policy.keys);
      expect(s.status).toBe("ready");
    }
    console.log(
      `full reload of ${after[0]!.policy.keys} keys: ${after.map((s) => s.policy.lastFullLoadMs).join(" / ")} ms per replica; ${outcomes.length} calls meanwhile; loading seen: ${sawLoading}`,
    );
    expect(after.every((s, i) => s.policy.fullLoads > before[i]!.policy.fullLoads)).toBe(true);
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.filter((o) => o !== "served")).toEqual([]);
    // …and changes flow again afterwards
    await gw.admin("key revoke", { id: k.id });
    expect(await untilEvery(k.key, "refused")).toBeLessThan(1_000);
  });
});
