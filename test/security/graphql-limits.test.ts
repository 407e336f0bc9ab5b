import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";

// Issue 12, items 1, 2 and 5: no GraphQL document, sent by anyone, stalls the process. Against the embedded
// product (one process: a stall there stalls every customer's completions too), without credentials.

let gw: Gateway;
let base: string;

beforeAll(async () => {
  gw = await startGateway("embedded", { config: {} });
  base = gw.bases[0]!;
}, 240_000);

afterAll(async () => {
  await gw?.stop();
});

interface Answer {
  status: number;
  ms: number;
  bytes: number;
  codes: string[];
  healthzMaxMs: number;
}

/** Sends one document while /healthz is polled back to back: how long it took, and the longest /healthz wait meanwhile. */
async function send(query: string): Promise<Answer> {
  let done = false;
  let healthzMaxMs = 0;
  const poll = (async () => {
    while (!done) {
      const t0 = performance.now();
      await (await fetch(`${base}/healthz`)).arrayBuffer();
      healthzMaxMs = Math.max(healthzMaxMs, performance.now() - t0);
    }
  })();
  const t0 = performance.now();
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  done = true;
  await poll;
  const body = JSON.parse(text) as { errors?: { extensions?: { code?: string } }[] };
  return {
    status: res.status,
    ms,
    bytes: text.length,
    codes: (body.errors ?? []).map((e) => e.extensions?.code ?? "?"),
    healthzMaxMs,
  };
}

const fanOut = (n: number) =>
  `query { ...F0 } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Query { ${i === n - 1 ? "__typename" : `...F${i + 1} ...F${i + 1}`} }`).join(" ")}`;

describe("GraphQL limits, unauthenticated", () => {
  it("refuses a fragment fan-out at once, at any depth, and /healthz never waits (item 1)", async () => {
    for (const n of [22, 30, 60]) {
      const a = await send(fanOut(n));
      expect(a.status).toBeLessThan(500);
      expect(a.codes).toContain("QUERY_TOO_COMPLEX");
      // 2^22 took 8 s before; 2^60 would take centuries without memoised fragments
      expect(a.ms).toBeLessThan(2_000);
      // a bound that a loaded CI machine cannot trip, and an exponential walk cannot meet (2^22 took 8 s)
      expect(a.healthzMaxMs).toBeLessThan(1_000);
    }
  });

  it("refuses 1,500 aliased introspection queries cheaply, and introspection itself (item 2)", async () => {
    const big = `{ ${Array.from({ length: 1_500 }, (_, i) => `a${i}: __schema { types { fields { args { name } } } }`).join(" ")} }`;
    expect(big.length).toBeGreaterThan(60_000);
    const a = await send(big);
    expect(a.status).toBeLessThan(500);
    expect(a.bytes).toBeLessThan(10_000); // was a 79 MB answer
    expect(a.ms).toBeLessThan(2_000);
    const one = await send("{ __schema { queryType { name } } }");
    expect(one.codes).toEqual(["INTROSPECTION_DISABLED"]);
    expect(JSON.stringify(one)).not.toContain('queryType":{');
  });

  it("caps aliases and prices the fields that hit the database (item 5)", async () => {
    const wallets = (k: number) =>
      `{ ${Array.from({ length: k }, (_, i) => `w${i}: wallet { spentToday spentThisMonth }`).join(" ")} }`;
    // 1,000 of them (3.4 s of database work before) are refused while parsing: the document is over the token limit
    const a = await send(wallets(1_000));
    expect(a.codes).toEqual(["GRAPHQL_PARSE_FAILED"]);
    expect(a.ms).toBeLessThan(2_000);
    expect((await send(wallets(16))).codes).toContain("TOO_MANY_ALIASES");
    const stats = `{ ${Array.from({ length: 8 }, (_, i) => `s${i}: usageStats(granularity: HOUR) { series { requests } }`).join(" ")} }`;
    expect((await send(stats)).codes).toContain("QUERY_TOO_COMPLEX");
    // a normal console query still passes validation (and is refused only for want of a session)
    const ok = await send(
      "{ wallet { balance spentToday spentThisMonth } usageStats(granularity: DAY) { series { requests } } }",
    );
    expect(ok.codes).toEqual(["UNAUTHENTICATED"]);
  });
});
