import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";

// Issue 25, item 15 (/metrics): the data plane served /metrics to anyone on the customer port unless
// MODELGATE_METRICS_TOKEN was set. Now it needs the token, unless the operator opts into open metrics with
// MODELGATE_METRICS_OPEN=1; /healthz and the anonymous /readyz (no upstream names) stay open for load balancers.

let closed: Gateway;
let open: Gateway;

beforeAll(async () => {
  [closed, open] = await Promise.all([
    startGateway("embedded", { config: {} }),
    startGateway("embedded", { config: {}, env: { MODELGATE_METRICS_OPEN: "1" } }),
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.all([closed?.stop(), open?.stop()]);
});

describe("/metrics on the customer port (issue 25, item 15)", () => {
  it("is refused without MODELGATE_METRICS_TOKEN, saying how to open it", async () => {
    const res = await fetch(`${closed.bases[0]}/metrics`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    const body = await res.text();
    expect(body).toContain("MODELGATE_METRICS_TOKEN");
    expect(body).not.toContain("modelgate_");
    expect((await fetch(`${closed.bases[0]}/healthz`)).status).toBe(200);
    expect((await fetch(`${closed.bases[0]}/readyz`)).status).toBe(200);
  });

  it("answers anyone only when the operator opted into open metrics", async () => {
    const res = await fetch(`${open.bases[0]}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("modelgate_");
  });
});
