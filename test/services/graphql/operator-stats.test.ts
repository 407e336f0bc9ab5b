import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customer, operatorClient, startHarness, type Client, type Harness } from "./harness.ts";

// Operators' usage across customers (by customer, model, upstream) and upstream health (calls, error rate,
// latency and TTFT percentiles) on Postgres, from rows the data planes would have reported.

let h: Harness;
let ops: Client;
let a: Awaited<ReturnType<typeof customer>>;
let b: Awaited<ReturnType<typeof customer>>;

beforeAll(async () => {
  h = await startHarness("gql_opstats");
  ops = await operatorClient(h);
  a = await customer(h, ops, "Alpha");
  b = await customer(h, ops, "Beta");
  await ops.gql(
    `mutation { upsertUpstream(input: { name: "up-a", protocol: openai, baseUrl: "http://127.0.0.1:9" }) { id } }`,
  );
  await ops.gql(
    `mutation { upsertUpstream(input: { name: "up-b", protocol: openai, baseUrl: "http://127.0.0.1:10" }) { id } }`,
  );
  // A: 10 calls on up-a in the last minutes (latency 100..1000 ms, TTFT 10..100 ms, one 502); B: 4 calls on up-b, and
  // one old call on up-b outside the health window
  await h.app.prisma.$executeRawUnsafe(
    `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, upstream, status, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, ttft_ms, started_at)
     SELECT gen_random_uuid(), 'a_' || i, $1::uuid, 'm-one-2025-01-01', 'openai', 'up-a', CASE WHEN i = 10 THEN 502 ELSE 200 END, 10, 5, 2, 3, 1000, i * 100, i * 10, now() - interval '1 minute'
     FROM generate_series(1, 10) AS i`,
    a.accountId,
  );
  await h.app.prisma.$executeRawUnsafe(
    `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, upstream, status, prompt_tokens, completion_tokens, cost_micro, latency_ms, started_at)
     SELECT gen_random_uuid(), 'b_' || i, $1::uuid, 'm-two-2025-01-01', 'openai', 'up-b', 200, 1, 1, 500, 50, now() - CASE WHEN i = 5 THEN interval '2 hours' ELSE interval '2 minutes' END
     FROM generate_series(1, 5) AS i`,
    b.accountId,
  );
});
afterAll(async () => {
  await h?.close();
});

describe("operator statistics", () => {
  it("reports each upstream's recent calls, error rate, latency and TTFT", async () => {
    const r = await ops.gql(
      `{ upstreamHealth(minutes: 15) { name breaker requests errors errorRate latencyAvgMs latencyP95Ms ttftAvgMs ttftP95Ms } }`,
    );
    const byName = Object.fromEntries(
      (r.upstreamHealth as { name: string; ttftP95Ms: number }[]).map((u) => [u.name, u]),
    );
    // the harness runs no data plane: breaker states are not visible here
    expect(byName["up-a"]).toEqual({
      name: "up-a",
      breaker: null,
      requests: 10,
      errors: 1,
      errorRate: 0.1,
      latencyAvgMs: 550,
      latencyP95Ms: 955,
      ttftAvgMs: 55,
      ttftP95Ms: expect.any(Number),
    });
    // p95 of 10..100 is 95.5, whose float rounds either way
    expect([95, 96]).toContain(byName["up-a"]?.ttftP95Ms);
    expect(byName["up-b"]).toMatchObject({ requests: 4, errors: 0, latencyAvgMs: 50, ttftAvgMs: null });
    const day = await ops.gql(`{ upstreamHealth(minutes: 1440) { name requests } }`);
    expect((day.upstreamHealth as { name: string; requests: number }[]).find((u) => u.name === "up-b")!.requests).toBe(
      5,
    );
    expect(await ops.code(`{ upstreamHealth(minutes: 0) { name } }`)).toBe("BAD_USER_INPUT");
  });

  it("sums usage across customers by customer, model and upstream", async () => {
    const r = await ops.gql(
      `{ operatorUsage { byAccount { key label requests errors amount } byModel { key requests amount } byUpstream { key requests errors promptTokens } } }`,
    );
    expect(r.operatorUsage.byAccount).toEqual([
      { key: a.accountId, label: "Alpha", requests: 10, errors: 1, amount: "0.01" },
      { key: b.accountId, label: "Beta", requests: 5, errors: 0, amount: "0.0025" },
    ]);
    expect(r.operatorUsage.byModel).toEqual([
      { key: "m-one-2025-01-01", requests: 10, amount: "0.01" },
      { key: "m-two-2025-01-01", requests: 5, amount: "0.0025" },
    ]);
    expect(r.operatorUsage.byUpstream).toEqual([
      { key: "up-a", requests: 10, errors: 1, promptTokens: 100 },
      { key: "up-b", requests: 5, errors: 0, promptTokens: 5 },
    ]);
    expect(await a.client.code(`{ operatorUsage { byAccount { key } } }`)).toBe("FORBIDDEN");
  });

  it("gives every group the figures of any usage statistic (the UsageFigures interface)", async () => {
    const figures = `... on UsageFigures { requests promptTokens completionTokens reasoningTokens cachedTokens totalTokens amountMicro }`;
    const r = await ops.gql(
      `{ operatorUsage { byAccount { key ${figures} } byModel { key ${figures} } byUpstream { key ${figures} } } }`,
    );
    const alpha = {
      requests: 10,
      promptTokens: 100,
      completionTokens: 50,
      reasoningTokens: 20,
      cachedTokens: 30,
      totalTokens: 150,
      amountMicro: "10000",
    };
    const beta = {
      requests: 5,
      promptTokens: 5,
      completionTokens: 5,
      reasoningTokens: 0,
      cachedTokens: 0,
      totalTokens: 10,
      amountMicro: "2500",
    };
    // by customer and by model from the hourly rollup, by upstream from the log: the same sums either way
    expect(r.operatorUsage.byAccount).toEqual([
      { key: a.accountId, ...alpha },
      { key: b.accountId, ...beta },
    ]);
    expect(r.operatorUsage.byModel).toEqual([
      { key: "m-one-2025-01-01", ...alpha },
      { key: "m-two-2025-01-01", ...beta },
    ]);
    expect(r.operatorUsage.byUpstream).toEqual([
      { key: "up-a", ...alpha },
      { key: "up-b", ...beta },
    ]);
  });
});
