import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream, RecordedRequest } from "../mocks/script.ts";

// Issue 12, item 4: two requests the upstream answered 500 for (or that outran the first-byte timeout, or
// crashed the demo upstream) opened the circuit breaker every account shares, and every other account got
// 503 for 30 s, at no cost to the attacker. Now one account's failures open only that account's own
// breaker; the shared one opens on failures from several accounts, or when the upstream cannot be reached.

const MODEL = "brk-chat-2025-01-01";
let upstream: MockUpstream;
let gw: Gateway;
const keys: Record<string, string> = {};

const poisoned = (r: RecordedRequest) => JSON.stringify(r.body).includes("poison");

async function call(
  account: string,
  content: string,
): Promise<{ status: number; code?: string; requestId: string | null; message?: string }> {
  const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${keys[account]}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content }] }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return {
    status: res.status,
    code: body.error?.code,
    message: body.error?.message,
    requestId: res.headers.get("x-gateway-request-id"),
  };
}

beforeAll(async () => {
  // The upstream fails for one kind of body only: what a hostile tenant can provoke at will.
  upstream = await startOpenAIUpstream({
    fallback: (r) => (poisoned(r) ? { error: { status: 500, message: "crashed on this body" } } : { text: ["fine"] }),
  });
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "operator-secret-upstream", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" },
      ],
      models: [
        { id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "operator-secret-upstream", model: "m" }] },
      ],
    },
    env: { MODELGATE_BREAKER_FAILURES: "3", MODELGATE_BREAKER_OPEN_MS: "60000", MODELGATE_RETRY_ATTEMPTS: "1" },
  });
  for (const name of ["mallory", "alice", "bob"]) {
    await gw.admin("account create", { name, balance: "10" });
    keys[name] = (await gw.admin<{ key: string }>("key create", { account: name, name: "k" })).key;
    await waitForKey(gw, keys[name]!);
  }
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

const readyz = async () => (await (await fetch(`${gw.bases[0]}/readyz`)).json()) as Record<string, unknown>;

describe("the shared circuit breaker and one tenant", () => {
  it("one account's failures, however many, never stop other accounts' calls", async () => {
    for (let i = 0; i < 10; i++) {
      const r = await call("mallory", "poison");
      expect([502, 503]).toContain(r.status);
      // The customer is never told which of the operator's upstreams failed.
      expect(r.message).not.toContain("operator-secret-upstream");
      expect(r.message).toContain(`(request id: ${r.requestId})`);
    }
    // Mallory's own breaker is open: her calls stop reaching the upstream...
    const seen = upstream.requests.length;
    expect((await call("mallory", "hello")).status).toBe(503);
    expect(upstream.requests.length).toBe(seen);
    // ...and nobody else is affected.
    for (const who of ["alice", "bob"]) {
      const r = await call(who, "hello");
      expect(r.status).toBe(200);
    }
    expect(await readyz()).toMatchObject({ upstreamsNotClosed: 0 });
  });

  it("failures from several accounts still open the shared breaker", async () => {
    for (let i = 0; i < 3; i++) await call("alice", "poison");
    for (let i = 0; i < 3; i++) await call("bob", "poison");
    expect(await readyz()).toMatchObject({ upstreamsNotClosed: 1 });
  });
});
