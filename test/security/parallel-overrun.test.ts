import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, type Mode, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Issue 25, item 13: 40 parallel calls on a key with a quota of 0.01 spent 0.64, and an account with a balance
// of 0.01 ended at −0.63: every call saw the same remainder, and a call's cost is known only when it ends.
// Now each admitted call holds its estimated cost (prompt estimate × input price + max_tokens × output price)
// against the key and the account until it ends, atomically with the check (in Redis across replicas), so
// the burst overruns by at most one call's cost. In distributed mode the calls alternate between the two
// replicas, so the bound holds across them.

const MODEL = "overrun-chat-2025-01-01";
const UPSTREAM_KEY = "sk-upstream-overrun";
// Prices per 1M tokens: input 1, output 16. The mock answers 10 + 1000 tokens: 10 + 16,000 = 16,010 micro,
// about the 0.016 a call. Each call asks for at most 1000 output tokens, so its estimate covers it.
const COST = 16_010n;
const LIMIT = 10_000n; // 0.01
const CALLS = 40;
const config = {
  upstreams: [{ name: "mock", protocol: "openai", baseUrl: "", apiKey: "${OVERRUN_UPSTREAM_KEY}" }],
  models: [
    {
      id: MODEL,
      reasoning: false,
      price: { input: 1, output: 16 },
      routes: [{ upstream: "mock", model: "overrun-chat", weight: 1 }],
    },
  ],
};

interface Outcome {
  status: number;
  code: string | null;
  requestId: string | null;
  message: string;
}

describe.each(["embedded", "distributed"] as Mode[])("%s mode", (mode) => {
  let gw: Gateway;
  let mock: OpenAIMock;

  beforeAll(async () => {
    mock = await startOpenAIMock(UPSTREAM_KEY);
    // Long enough that all 40 calls are admitted while the first ones are still upstream.
    mock.fallback = { content: "fine", promptTokens: 10, completionTokens: 1000, delayMs: 500 };
    config.upstreams[0]!.baseUrl = mock.url;
    gw = await startGateway(mode, { config, env: { OVERRUN_UPSTREAM_KEY: UPSTREAM_KEY } });
  }, 180_000);

  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });

  async function call(base: string, key: string): Promise<Outcome> {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }),
    });
    const body = (await res.json()) as { error?: { code: string; message: string } };
    return {
      status: res.status,
      code: body.error?.code ?? null,
      requestId: res.headers.get("x-gateway-request-id"),
      message: body.error?.message ?? "",
    };
  }

  /** Fires the calls at once (alternating replicas), and checks what was served was charged COST each. */
  async function burst(account: string, key: string, refusal: { status: number; code: string }): Promise<bigint> {
    const bases = gw.bases;
    const outcomes = await Promise.all(Array.from({ length: CALLS }, (_, i) => call(bases[i % bases.length]!, key)));
    const served = outcomes.filter((o) => o.status === 200).length;
    const refused = outcomes.filter((o) => o.status !== 200);
    // Every refusal is the limit's exhaustion, in OpenAI's shape with the request id.
    for (const o of refused) {
      expect({ status: o.status, code: o.code }).toEqual(refusal);
      expect(o.requestId).toMatch(/^req_[0-9a-f]{24}$/);
      expect(o.message).toContain(`(request id: ${o.requestId})`);
    }
    expect(served).toBeGreaterThanOrEqual(1); // the limit was usable
    // The usage log holds exactly the served calls, at COST each: the overrun is measured, not assumed.
    const rows = await eventually(
      () => gw.usage(account, 100),
      (r) => r.filter((x) => x.status === 200).length >= served,
      20_000,
      100,
    );
    const spent = rows.filter((x) => x.status === 200).reduce((s, r) => s + r.costMicro, 0n);
    expect(spent).toBe(BigInt(served) * COST);
    const overrun = spent - LIMIT;
    console.log(
      `[${mode}] ${account}: ${served} of ${CALLS} served, spent ${spent} micro against ${LIMIT}: overrun ${overrun} micro (one call: ${COST})`,
    );
    return overrun;
  }

  it(`${CALLS} parallel calls overrun a key's quota of 0.01 by at most one call's cost`, async () => {
    await gw.admin("account create", { name: "quota-burst", balance: "100" });
    const k = await gw.admin<{ key: string }>("key create", { account: "quota-burst", quota: "0.01" });
    await waitForKey(gw, k.key);
    const overrun = await burst("quota-burst", k.key, { status: 429, code: "insufficient_quota" });
    expect(overrun).toBeLessThanOrEqual(COST);
  }, 60_000);

  it(`${CALLS} parallel calls overrun an account's balance of 0.01 by at most one call's cost`, async () => {
    await gw.admin("account create", { name: "balance-burst", balance: "0.01" });
    const k = await gw.admin<{ key: string }>("key create", { account: "balance-burst" });
    await waitForKey(gw, k.key);
    const overrun = await burst("balance-burst", k.key, { status: 402, code: "insufficient_balance" });
    expect(overrun).toBeLessThanOrEqual(COST);
    // The wallet ends no lower than one call below zero.
    const balance = await eventually(
      () => gw.balance("balance-burst"),
      (b) => b === -overrun,
      20_000,
      100,
    );
    expect(balance).toBeGreaterThanOrEqual(-COST);
  }, 60_000);
});
