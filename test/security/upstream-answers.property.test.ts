import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { type OddAnswer, type OddProtocol, type OddUpstream, startOddUpstream } from "../mocks/odd-upstream.ts";
import { healthzPoller } from "./healthz-poller.ts";

// Issue 25 items 9 and 10, as a property: whatever an upstream answers (usage counts of any JSON type and
// sign, or none; answers small and huge; an event that never ends), behind an OpenAI, Anthropic, Gemini or
// Responses upstream, streamed or not:
// - the gateway never answers 500 from its own failure (an upstream's failure as a 502 is fine);
// - every call the upstream answered is in the usage log with a cost that is never negative and, the prompt
//   being non-empty, above 0;
// - the key (concurrency 1) makes its next call right after: every slot was released;
// - /healthz is never held long (the worst answer is printed; the goal is 50 ms).

const MODEL = "prop-answers-2025-01-01";
const PROTOCOLS: OddProtocol[] = ["openai", "anthropic", "gemini", "openai-responses"];

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
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
  await gw.admin("account create", { name: "prop", balance: "1000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "prop", name: "one", concurrency: "1" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

/** A usage count as an upstream might send it: good, or any other JSON value, or left out. */
const count = fc.oneof(
  { weight: 3, arbitrary: fc.nat({ max: 100_000 }) },
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1_000_000_000, max: -1 }),
  fc.string({ maxLength: 6 }),
  fc.constantFrom(null, undefined, 2 ** 53, 2 ** 60, 1e300, true),
  fc.constant({ n: 1 }),
);

const MB = 1024 * 1024;
const answer = fc.record({
  protocol: fc.constantFrom(...PROTOCOLS),
  stream: fc.boolean(),
  prompt: count,
  completion: count,
  noUsage: fc.boolean(),
  // Streamed padding is one event built in this process (kept small: the poller shares the process); the
  // non-streamed one is written in pieces, so it may pass the 16 MiB limit.
  size: fc.constantFrom(0, 1_000, 100_000, 2 * MB, 20 * MB),
  unterminated: fc.constantFrom(0, 0, 0, 5 * MB),
});

const rows = () => gw.admin<Row[]>("usage list", { account: "prop", limit: "20" });

async function call(p: OddProtocol, stream: boolean) {
  const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: `${MODEL}-${p}`, stream, messages: [{ role: "user", content: "a prompt" }] }),
  });
  return { status: res.status, text: await res.text(), requestId: res.headers.get("x-request-id") ?? "" };
}

it("no own 500, a charge >= 0 (> 0 when answered), the slot released, no long stall", async () => {
  let runs = 0;
  const worst = await healthzPoller(gw.bases[0]!).worstDuring(() =>
    fc.assert(
      fc.asyncProperty(answer, async (a) => {
        runs++;
        const script: OddAnswer = { prompt: a.prompt, completion: a.completion, noUsage: a.noUsage };
        if (a.size) script.padBytes = a.stream ? Math.min(a.size, 2 * MB) : a.size;
        if (a.stream && a.unterminated) script.unterminatedBytes = a.unterminated;
        mock.queue.push(script);
        const r = await call(a.protocol, a.stream);
        expect(r.status, r.text.slice(0, 300)).not.toBe(500);
        expect(r.text).not.toContain("internal_error");
        expect([200, 502]).toContain(r.status);
        const row = (await eventually(rows, (x) => x.some((y) => y.requestId === r.requestId), 10_000)).find(
          (y) => y.requestId === r.requestId,
        )!;
        // The upstream answered every one of these (its status line came): never free, never a credit.
        expect(BigInt(row.costMicro)).toBeGreaterThan(0n);
        // Concurrency 1: the next call is admitted at once (a slot never given back would refuse it).
        mock.queue.push({ prompt: 3, completion: 1 });
        const next = await call("openai", false);
        expect(next.status, next.text.slice(0, 300)).toBe(200);
      }),
      { numRuns: 32, endOnFailure: true },
    ),
  );
  console.log(`${runs} upstream answers; /healthz worst answer meanwhile: ${Math.round(worst)} ms`);
  // The goal is 50 ms (printed above); on a loaded 2-core machine a wall-clock bound only catches the
  // pathological (the stalls this guards against were seconds).
  expect(worst).toBeLessThan(1_000);
}, 240_000);
