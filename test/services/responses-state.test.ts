import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";

// The Responses API's stored conversations in distributed mode (issue 14): a response created on one data-plane
// replica is continued (previous_response_id) and read (GET /v1/responses/{id}) on another, because it is in
// Redis, sealed with the master key, before the first replica says it is complete.

const MODEL = "state-claude-2025-01-01";
let mock: MockUpstream;
let gw: Gateway;
let key: string;

beforeAll(async () => {
  mock = await startAnthropicUpstream();
  gw = await startGateway("distributed", {
    config: {
      upstreams: [{ name: "claude", protocol: "anthropic", baseUrl: mock.url, apiKey: "${MOCK_KEY}" }],
      models: [{ id: MODEL, price: { input: 1, output: 2 }, routes: [{ upstream: "claude", model: "claude-mock" }] }],
    },
    env: { MOCK_KEY: DEFAULT_MOCK_KEY, MODELGATE_RESPONSES_STORE: "1" },
  });
  await gw.admin("account create", { name: "state", balance: "10" });
  key = (await gw.admin<{ key: string }>("key create", { account: "state" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

const client = (i: number) => new OpenAI({ baseURL: `${gw.bases[i]}/v1`, apiKey: key, maxRetries: 0 });

it("previous_response_id works across replicas, streamed and not, and the stored record is sealed in Redis", async () => {
  expect(gw.bases.length).toBe(2);
  mock.reply({ text: ["Hello Ada."] }, { text: ["You are Ada."] }, { text: ["Still Ada."] });
  const first = await client(0).responses.create({ model: MODEL, input: "I am Ada." });
  const second = await client(1).responses.create({ model: MODEL, input: "Who am I?", previous_response_id: first.id });
  expect(second.output_text).toBe("You are Ada.");
  const sent = mock.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
  expect(sent.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  expect(JSON.stringify(sent.messages)).toContain("Hello Ada.");

  // A stream on replica 1, continued on replica 0 right after its response.completed.
  const stream = await client(1).responses.create({
    model: MODEL,
    input: "And now?",
    previous_response_id: second.id,
    stream: true,
  });
  let completedId = "";
  for await (const ev of stream) if (ev.type === "response.completed") completedId = ev.response.id;
  const again = await client(0).responses.retrieve(completedId);
  expect(again.output_text).toBe("Still Ada.");
  expect(again.previous_response_id).toBe(second.id);

  // Sealed: the conversation's words are nowhere in Redis in clear.
  const { Redis } = await import("ioredis");
  const redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379");
  try {
    const prefix = String(gw.cliEnv.MODELGATE_REDIS_PREFIX);
    const keys = await redis.keys(`${prefix}responses:*`);
    expect(keys.length).toBe(3);
    for (const k of keys) {
      expect(await redis.get(k)).not.toContain("Ada");
      expect(await redis.pttl(k)).toBeGreaterThan(0);
    }
  } finally {
    redis.disconnect();
  }
});

it("a continuation is topped up in Redis to the conversation it expands to: admitted where it fits, a 429 giving all back where not", async () => {
  const long = Array.from({ length: 800 }, (_, i) => `word${i}`).join(" "); // ~1,600 tokens
  const first = await client(0).responses.create({ model: MODEL, input: long });
  const fits = await gw.admin<{ key: string }>("key create", { account: "state", tpm: "2500", concurrency: "1" });
  const tight = await gw.admin<{ key: string }>("key create", { account: "state", tpm: "1000", concurrency: "1" });
  await waitForKey(gw, fits.key);
  await waitForKey(gw, tight.key);
  const as = (k: string) => new OpenAI({ baseURL: `${gw.bases[1]}/v1`, apiKey: k, maxRetries: 0 });
  const continuation = (k: string) =>
    as(k)
      .responses.create({ model: MODEL, input: "And then?", previous_response_id: first.id, store: false })
      .withResponse();

  // Taken on the conversation, not the body's few dozen tokens; released on its usage (15 tokens), so a second
  // continuation fits as well.
  const one = await continuation(fits.key);
  const remaining = Number(one.response.headers.get("x-ratelimit-remaining-tokens"));
  expect(remaining).toBeGreaterThan(0);
  expect(remaining).toBeLessThan(1000);
  const two = await continuation(fits.key);
  expect(Number(two.response.headers.get("x-ratelimit-remaining-tokens"))).toBeGreaterThanOrEqual(remaining - 15);

  // The conversation does not fit 1,000 a minute next to a call of its own: refused before it goes upstream.
  await as(tight.key).responses.create({ model: MODEL, input: "Hi.", store: false });
  const sent = mock.requests.length;
  const refused = await continuation(tight.key).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
  expect(mock.requests.length).toBe(sent);
  // Its slot and tokens came back: the key's one slot takes a short call at once.
  await expect(
    as(tight.key).responses.create({ model: MODEL, input: "Hi again.", store: false }),
  ).resolves.toBeTruthy();
});
