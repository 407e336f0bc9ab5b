import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";

// Issue 12, item 14: POST /v1/messages/count_tokens and GET /v1/models bypassed the key's rate limits (10 of
// 10 count_tokens calls with 7 MB bodies on an rpm=1 key; 3 MB here, under the 4 MiB body limit). They now
// count as requests; a key over its limit is refused before its body is read.

const MODEL = "demo-chat-2025-01-01";
let gw: Gateway;

beforeAll(async () => {
  gw = await startGateway("embedded", {
    config: {
      upstreams: [{ name: "demo", protocol: "demo", baseUrl: "demo://local" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "demo", model: "demo" }] }],
    },
  });
  await gw.admin("account create", { name: "lim", balance: "10" });
}, 180_000);

afterAll(async () => {
  await gw?.stop();
});

const newKey = async (name: string) => {
  const key = (await gw.admin<{ key: string }>("key create", { account: "lim", name, rpm: "1" })).key;
  await waitForKey(gw, key); // (GET /v1/models: this spends the key's one request of the minute)
  return key;
};

it("count_tokens counts against the key's requests per minute, and a refused key's big body is not read", async () => {
  const key = await newKey("count");
  const count = (body: string) =>
    fetch(`${gw.bases[0]}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body,
    });
  const big = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x".repeat(3 * 1024 * 1024) }] });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await count(big);
    statuses.push(res.status);
    if (res.status === 429) {
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(body).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
      expect(body.error.message).toContain(`(request id: ${res.headers.get("x-gateway-request-id")})`);
      expect(res.headers.get("retry-after")).toBeTruthy();
    } else await res.arrayBuffer();
  }
  // waitForKey uses none of the key's budget (a refused model lookup gives its request back): the first
  // count_tokens takes the minute's one request, every later one is refused.
  expect(statuses).toEqual([200, 429, 429, 429, 429]);
});

it("GET /v1/models counts against the key's requests per minute", async () => {
  const key = await newKey("models");
  const list = () => fetch(`${gw.bases[0]}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  expect((await list()).status).toBe(200); // the minute's one request
  const res = await list();
  expect(res.status).toBe(429);
  const body = (await res.json()) as { error: { code: string } };
  expect(body.error.code).toBe("rate_limit_exceeded");
});
