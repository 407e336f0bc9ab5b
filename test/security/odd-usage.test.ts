import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { type OddProtocol, type OddUpstream, startOddUpstream } from "../mocks/odd-upstream.ts";

// Issue 25 item 9: an upstream's usage counts that are not non-negative integers. `prompt_tokens: 10.5` was a
// 500 that left the call unbilled and its key's concurrency slot taken for good (a key with concurrency 1 was
// refused ever after); a negative count credited the wallet. Now a malformed report counts as none: the call
// is answered, billed by estimate (flagged), never below 0, and its slot is free for the next call at once.

const MODEL = "odd-usage-2025-01-01";
const PROTOCOLS: OddProtocol[] = ["openai", "anthropic", "gemini", "openai-responses"];

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
  estimated: boolean;
  promptTokens: number;
  completionTokens: number;
}

let mock: OddUpstream;
let gw: Gateway;
let key: string;

beforeAll(async () => {
  mock = await startOddUpstream();
  gw = await startGateway("embedded", {
    config: {
      upstreams: PROTOCOLS.map((p) => ({ name: `odd-${p}`, protocol: p, baseUrl: mock.url[p] })),
      models: PROTOCOLS.map((p) => ({
        id: `${MODEL}-${p}`,
        price: { input: 1, output: 2 },
        routes: [{ upstream: `odd-${p}`, model: `${MODEL}-${p}` }],
      })),
    },
  });
  await gw.admin("account create", { name: "odd", balance: "1000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "odd", name: "one-at-a-time", concurrency: "1" }))
    .key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

const rows = () => gw.admin<Row[]>("usage list", { account: "odd", limit: "200" });

/** One call of the OpenAI client's protocol to the model behind protocol `p` (translated unless OpenAI). */
async function call(p: OddProtocol, stream: boolean): Promise<{ status: number; text: string; requestId: string }> {
  const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: `${MODEL}-${p}`,
      stream,
      messages: [{ role: "user", content: "a prompt of some forty characters, or so" }],
    }),
  });
  return { status: res.status, text: await res.text(), requestId: res.headers.get("x-request-id") ?? "" };
}

const ODD: [string, unknown][] = [
  ["a fraction", 10.5],
  ["a negative count", -1_000_000],
  ["a string", "12"],
  ["past 2^53", 2 ** 60],
  ["an object", { n: 1 }],
];

describe("usage counts that are not non-negative integers", () => {
  for (const p of PROTOCOLS)
    for (const stream of [false, true])
      it(`${p} upstream, ${stream ? "streamed" : "not streamed"}: answered, billed by estimate, slot free`, async () => {
        for (const [name, value] of ODD) {
          // The prompt count is odd; the output count is a good one, so only the estimate tells them apart.
          mock.queue.push({ prompt: value, completion: 5 });
          const odd = await call(p, stream);
          expect(odd.status, `${name}: ${odd.text.slice(0, 300)}`).toBe(200);
          if (stream) expect(odd.text, name).not.toContain("internal_error");
          // The key allows one call at a time: the next one is admitted at once.
          const next = await call(p, stream);
          expect(next.status, `${name}: the next call`).toBe(200);
          const row = (await eventually(rows, (r) => r.some((x) => x.requestId === odd.requestId), 10_000)).find(
            (x) => x.requestId === odd.requestId,
          )!;
          expect(row, name).toMatchObject({ status: 200, estimated: true });
          expect(row.promptTokens, name).toBeGreaterThan(0);
          expect(BigInt(row.costMicro), name).toBeGreaterThan(0n);
        }
      });

  it("a negative output count never credits the wallet", async () => {
    const before = await gw.balance("odd");
    mock.queue.push({ prompt: 10, completion: -1_000_000_000 });
    const r = await call("openai", false);
    expect(r.status).toBe(200);
    const row = (await eventually(rows, (x) => x.some((y) => y.requestId === r.requestId), 10_000)).find(
      (x) => x.requestId === r.requestId,
    )!;
    expect(row.estimated).toBe(true);
    expect(BigInt(row.costMicro)).toBeGreaterThan(0n);
    await eventually(
      () => gw.balance("odd"),
      (b) => b === before - BigInt(row.costMicro),
      10_000,
    );
  });
});
