import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Issue 12, item 15 (data plane): /metrics and /readyz were open to anyone and named the operator's upstreams,
// and customers' error messages named them too. With MODELGATE_METRICS_TOKEN set both need it as a bearer
// token; without it, /readyz names no upstream (test/security/breaker-tenants.test.ts checks that side). A
// customer's error never names the upstream or repeats what it said about itself; the log keeps both.

const MODEL = "ops-chat-2025-01-01";
const TOKEN = "metrics-token-for-tests";
const SECRET = "acme-azure-eastus-prod";
let upstream: MockUpstream;
let gw: Gateway;
let key: string;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({
    fallback: (r) => {
      const status = Number(/status (\d+)/.exec(JSON.stringify(r.body))?.[1] ?? 0);
      return status ? { error: { status, message: `deployment ${SECRET} of org-123 says no` } } : { text: ["ok"] };
    },
  });
  gw = await startGateway("embedded", {
    config: {
      upstreams: [{ name: SECRET, protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: SECRET, model: "m" }] }],
    },
    env: { MODELGATE_METRICS_TOKEN: TOKEN, MODELGATE_RETRY_ATTEMPTS: "1", MODELGATE_BREAKER_FAILURES: "1000" },
  });
  await gw.admin("account create", { name: "ops", balance: "10" });
  key = (await gw.admin<{ key: string }>("key create", { account: "ops", name: "k" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

describe("/metrics and /readyz with MODELGATE_METRICS_TOKEN", () => {
  it("refuse a caller without the token, or with a wrong one", async () => {
    for (const path of ["/metrics", "/readyz"]) {
      expect((await fetch(`${gw.bases[0]}${path}`)).status).toBe(401);
      expect((await fetch(`${gw.bases[0]}${path}`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    }
  });
  it("answer in full with it", async () => {
    await fetch(`${gw.bases[0]}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const ready = (await (await fetch(`${gw.bases[0]}/readyz`, { headers: auth })).json()) as {
      upstreams: Record<string, string>;
    };
    expect(ready.upstreams).toEqual({ [SECRET]: "closed" });
    const metrics = await fetch(`${gw.bases[0]}/metrics`, { headers: auth });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("modelgate_");
  });
  it("leave /healthz open (it says nothing)", async () => {
    expect(await (await fetch(`${gw.bases[0]}/healthz`)).json()).toEqual({ status: "ok" });
  });
});

describe("customers' errors never name the operator's upstream", () => {
  for (const status of [500, 503, 429, 401, 403, 404]) {
    it(`upstream ${status}`, async () => {
      const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: `status ${status}` }] }),
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      const text = await res.text();
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("org-123");
      expect(text).toContain(`(request id: ${res.headers.get("x-gateway-request-id")})`);
    });
  }
  it("the log keeps the upstream's name and what it said", () => {
    const line = gw.procs[0]!.output()
      .split("\n")
      .find((l) => l.includes("upstream refused the call"));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ upstream: SECRET, upstreamMessage: expect.stringContaining("org-123") });
  });
});
