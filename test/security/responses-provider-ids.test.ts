import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, type Mode, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";

// Issue 25, item 7: every tenant's calls to an `openai-responses` upstream go through the operator's one provider
// account, so a second customer who sent the first one's provider response id as previous_response_id was given
// the first one's conversation. The gateway now remembers, per account (hashed, with the stored responses' TTL),
// the ids the provider handed out, and refuses any other before it goes upstream: a 404 like an unknown id, in
// the Responses error shape. Item ids (item_reference, or any input item carrying an id) and a `conversation`
// are checked the same way; GET/DELETE /v1/responses/{id} never reach the provider.

const MODEL = "pass-resp-2025-01-01";

interface Answer {
  status: number;
  requestId: string;
  body: {
    id?: string;
    output?: { id: string; type: string }[];
    error?: { message: string; type: string; code: string; param: string | null };
  };
}

describe.each<Mode>(["embedded", "distributed"])("%s", (mode) => {
  let mock: MockUpstream;
  let gw: Gateway;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    mock = await startOpenAIUpstream();
    gw = await startGateway(mode, {
      config: {
        upstreams: [{ name: "resp", protocol: "openai-responses", baseUrl: mock.url, apiKey: "${MOCK_KEY}" }],
        models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "resp", model: "gpt-resp" }] }],
      },
      env: { MOCK_KEY: DEFAULT_MOCK_KEY },
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

  /** replica `i` in distributed mode (the other replica than the one that answered, to cross Redis) */
  const call = async (key: string, method: string, path: string, body?: unknown, i = 0): Promise<Answer> => {
    const r = await fetch(`${gw.bases[i % gw.bases.length]}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return {
      status: r.status,
      requestId: r.headers.get("x-gateway-request-id") ?? "",
      body: text.startsWith("{") ? (JSON.parse(text) as never) : ({} as never),
    };
  };
  const create = (key: string, body: Record<string, unknown>, i = 0) =>
    call(key, "POST", "/v1/responses", { model: MODEL, ...body }, i);

  /** A streamed answer's response and item ids, from its events. */
  async function streamed(key: string, input: string): Promise<{ id: string; itemId: string }> {
    const r = await fetch(`${gw.bases[0]}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, input, stream: true }),
    });
    expect(r.status).toBe(200);
    const text = await r.text();
    const completed = text
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)) as { type: string; response?: Answer["body"] })
      .find((e) => e.type === "response.completed")!;
    return { id: completed.response!.id!, itemId: completed.response!.output![0]!.id };
  }

  const expectNotFound = (a: Answer, param: string) => {
    expect(a.status, JSON.stringify(a.body)).toBe(404);
    expect(a.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found", param });
    expect(a.body.error!.message).toContain(`(request id: ${a.requestId})`);
  };

  it("another account's provider response id is a 404 and never reaches the provider; the owner continues", async () => {
    mock.reply({ text: ["Alice's secret is 42."] });
    const first = await create(alice, { input: "Remember: my secret is 42." });
    expect(first.status).toBe(200);
    const calls = mock.requests.length;
    expectNotFound(
      await create(bob, { input: "What is my secret?", previous_response_id: first.body.id }, 1),
      "previous_response_id",
    );
    expectNotFound(await create(bob, { input: "x", conversation: "conv_operator_owned" }, 1), "conversation");
    expect(mock.requests.length).toBe(calls);
    // The owner's own continuation passes (on the other replica, so through Redis in distributed mode).
    const next = await create(alice, { input: "What is my secret?", previous_response_id: first.body.id }, 1);
    expect(next.status).toBe(200);
    expect((mock.requests.at(-1)!.body as { previous_response_id: string }).previous_response_id).toBe(first.body.id);
  });

  it("item ids (item_reference, or a reasoning item without its content) from another account's stream or answer are 404s", async () => {
    const a = await streamed(alice, "Tell me a secret.");
    mock.reply({ text: ["ok"], thinking: ["secret thoughts"] });
    const withReasoning = await create(alice, { input: "Think." });
    const reasoningId = withReasoning.body.output!.find((o) => o.type === "reasoning")!.id;
    const calls = mock.requests.length;
    expectNotFound(await create(bob, { input: [{ type: "item_reference", id: a.itemId }] }, 1), "input[0].id");
    expectNotFound(
      await create(
        bob,
        {
          input: [
            { role: "user", content: "hi" },
            { type: "reasoning", id: reasoningId, summary: [] },
          ],
        },
        1,
      ),
      "input[1].id",
    );
    expect(mock.requests.length).toBe(calls);
    const own = await create(
      alice,
      {
        input: [
          { type: "item_reference", id: a.itemId },
          { role: "user", content: "more" },
        ],
      },
      1,
    );
    expect(own.status).toBe(200);
    const continued = await create(alice, { input: "and?", previous_response_id: a.id }, 1);
    expect(continued.status).toBe(200);
  });

  it("GET, DELETE and input_items of a provider id are answered by the gateway alone", async () => {
    mock.reply({ text: ["stored upstream"] });
    const first = await create(alice, { input: "keep this" });
    const calls = mock.requests.length;
    for (const key of [alice, bob]) {
      expectNotFound(await call(key, "GET", `/v1/responses/${first.body.id}`), "response_id");
      expectNotFound(await call(key, "GET", `/v1/responses/${first.body.id}/input_items`), "response_id");
      expectNotFound(await call(key, "DELETE", `/v1/responses/${first.body.id}`), "response_id");
    }
    expect(mock.requests.length).toBe(calls);
  });

  // Only distributed mode keeps them in Redis (declared there alone, so no skipped test is reported)
  if (mode === "distributed")
    it("Redis holds digests with a TTL, never the ids", async () => {
      mock.reply({ text: ["x"] });
      const first = await create(alice, { input: "hello" });
      const { Redis } = await import("ioredis");
      const redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379");
      try {
        const prefix = String(gw.cliEnv.MODELGATE_REDIS_PREFIX);
        const keys = await redis.keys(`${prefix}pids:*`);
        expect(keys.length).toBeGreaterThan(0);
        for (const k of keys) {
          expect(k).not.toContain(first.body.id!);
          expect(await redis.pttl(k)).toBeGreaterThan(0);
        }
      } finally {
        redis.disconnect();
      }
    });
});
