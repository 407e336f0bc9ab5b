import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, type Mode, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";

// Issue 25, item 6: stored responses had one global bound in embedded mode (10,000 records: one tenant's 10,001
// tiny calls evicted another's stored response), no byte bound, and none at all in Redis. Now each account has
// its own quotas, records (MODELGATE_RESPONSES_MAX_PER_ACCOUNT) and sealed bytes
// (MODELGATE_RESPONSES_MAX_BYTES_PER_ACCOUNT); past either the account's own oldest records go, never another's.

const MODEL = "quota-chat-2025-01-01";
const MAX_RECORDS = 5;
const MAX_BYTES = 200_000;

describe.each<Mode>(["embedded", "distributed"])("%s", (mode) => {
  let mock: MockUpstream;
  let gw: Gateway;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    mock = await startOpenAIUpstream();
    gw = await startGateway(mode, {
      config: {
        upstreams: [{ name: "chat", protocol: "openai", baseUrl: mock.url, apiKey: "${MOCK_KEY}" }],
        models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "chat", model: "gpt-mock" }] }],
      },
      env: {
        MOCK_KEY: DEFAULT_MOCK_KEY,
        MODELGATE_RESPONSES_STORE: "1",
        MODELGATE_RESPONSES_MAX_PER_ACCOUNT: String(MAX_RECORDS),
        MODELGATE_RESPONSES_MAX_BYTES_PER_ACCOUNT: String(MAX_BYTES),
      },
    });
    await gw.admin("account create", { name: "alice", balance: "1000" });
    await gw.admin("account create", { name: "bob", balance: "1000" });
    alice = (await gw.admin<{ key: string }>("key create", { account: "alice" })).key;
    bob = (await gw.admin<{ key: string }>("key create", { account: "bob" })).key;
    await waitForKey(gw, alice);
    await waitForKey(gw, bob);
  }, 180_000);

  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  const create = async (key: string, text = "ok"): Promise<string> => {
    mock.reply({ text: [text] });
    const r = await fetch(`${gw.bases[0]}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, input: "hi" }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { id: string }).id;
  };
  const kept = async (key: string, id: string): Promise<boolean> => {
    const r = await fetch(`${gw.bases.at(-1)}/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } });
    await r.arrayBuffer();
    return r.status === 200;
  };

  it("one account's many calls push out its own oldest records, never another account's", async () => {
    const bobs = await create(bob);
    const alices: string[] = [];
    for (let i = 0; i < MAX_RECORDS * 3; i++) alices.push(await create(alice));
    expect(await kept(bob, bobs)).toBe(true);
    const present = await Promise.all(alices.map((id) => kept(alice, id)));
    expect(present).toEqual(alices.map((_, i) => i >= alices.length - MAX_RECORDS));
  });

  it("the byte quota: large answers push out the account's own oldest, another's stay", async () => {
    const bobs = await create(bob, "b".repeat(30_000));
    // Each record holds the answer twice (the Response and the conversation): about 80 KB sealed, so two fit.
    const big: string[] = [];
    for (let i = 0; i < 4; i++) big.push(await create(alice, "a".repeat(30_000)));
    expect(await Promise.all(big.map((id) => kept(alice, id)))).toEqual([false, false, true, true]);
    expect(await kept(bob, bobs)).toBe(true);
  });

  // Only distributed mode has a Redis index (declared there alone, so no skipped test is reported)
  if (mode === "distributed")
    it("Redis: the account's index expires with its records", async () => {
      const { Redis } = await import("ioredis");
      const redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379");
      try {
        const prefix = String(gw.cliEnv.MODELGATE_REDIS_PREFIX);
        const index = await redis.keys(`${prefix}responses-index:*`);
        expect(index.length).toBe(4); // ids and sizes, for two accounts
        for (const k of index) expect(await redis.pttl(k)).toBeGreaterThan(0);
        expect((await redis.keys(`${prefix}responses:*`)).length).toBeLessThanOrEqual(2 * MAX_RECORDS);
      } finally {
        redis.disconnect();
      }
    });
});
