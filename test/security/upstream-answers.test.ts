import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { type OddProtocol, type OddUpstream, startOddUpstream } from "../mocks/odd-upstream.ts";
import { healthzPoller } from "./healthz-poller.ts";

// Issue 25 item 10: upstream answers of any size. A 300 MB JSON answer added 1.5 GB and stalled /healthz
// 4.6 s; one 200 MB event without its blank line stalled it 10.5–14.8 s (the SSE parser scanned the whole
// buffer again on every chunk); a stream that drips a byte now and then was never cut. Now a body read whole
// is refused past MODELGATE_UPSTREAM_MAX_ANSWER_BYTES (16 MiB), an event past MODELGATE_UPSTREAM_MAX_EVENT_BYTES
// (4 MiB), an answer past MODELGATE_UPSTREAM_MAX_ANSWER_MS (here 3 s): a 502 in the client's protocol with
// the request id when nothing was sent, a stream error frame otherwise, the call charged for the prompt the
// upstream processed, and no stall of the process.

const MODEL = "answers-2025-01-01";
const PROTOCOLS: OddProtocol[] = ["openai", "anthropic", "gemini", "openai-responses"];

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
  errorCode?: string | null;
}

let mock: OddUpstream;
let gw: Gateway;
let key: string;
const stalls: Record<string, number> = {};

beforeAll(async () => {
  mock = await startOddUpstream();
  gw = await startGateway("embedded", {
    env: { MODELGATE_UPSTREAM_MAX_ANSWER_MS: "3000" },
    config: {
      upstreams: PROTOCOLS.map((p) => ({ name: `odd-${p}`, protocol: p, baseUrl: mock.url[p] })),
      models: PROTOCOLS.map((p) => ({
        id: `${MODEL}-${p}`,
        price: { input: 1, output: 2 },
        routes: [{ upstream: `odd-${p}`, model: `${MODEL}-${p}` }],
      })),
    },
  });
  await gw.admin("account create", { name: "answers", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "answers" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  console.log(
    `/healthz worst answer (ms) while each upstream answer was relayed:\n${Object.entries(stalls)
      .map(([k, v]) => `  ${String(Math.round(v)).padStart(5)}  ${k}`)
      .join("\n")}`,
  );
  await gw?.stop();
  await mock?.close();
});

const rows = () => gw.admin<Row[]>("usage list", { account: "answers", limit: "100" });
const rowOf = async (requestId: string): Promise<Row> =>
  (await eventually(rows, (r) => r.some((x) => x.requestId === requestId), 15_000)).find(
    (x) => x.requestId === requestId,
  )!;

async function call(p: OddProtocol, stream: boolean) {
  const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: `${MODEL}-${p}`, stream, messages: [{ role: "user", content: "a short prompt" }] }),
  });
  return { status: res.status, text: await res.text(), requestId: res.headers.get("x-request-id") ?? "" };
}

/** The call, with the worst /healthz answer while it ran kept under `name`. */
async function measured(name: string, work: () => Promise<Awaited<ReturnType<typeof call>>>) {
  let out!: Awaited<ReturnType<typeof call>>;
  stalls[name] = await healthzPoller(gw.bases[0]!).worstDuring(async () => {
    out = await work();
  });
  return out;
}

// The goal is 50 ms (reported above); a wall-clock bound in a test on a loaded 2-core machine can only catch
// the pathological, and the stalls this test was written against were seconds.
const STALL_BOUND_MS = 1_000;

describe("upstream answers past the gateway's limits", () => {
  it("a 300 MB non-streamed answer: 502 in the client's shape with the request id, charged, no stall", async () => {
    mock.queue.push({ padBytes: 300 * 1024 * 1024, prompt: 10, completion: 5 });
    const r = await measured("300 MB JSON answer (OpenAI)", () => call("openai", false));
    expect(r.status).toBe(502);
    const body = JSON.parse(r.text) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("upstream_answer_too_large");
    expect(body.error.message).toContain(r.requestId);
    const row = await rowOf(r.requestId);
    expect(row.status).toBe(502);
    expect(BigInt(row.costMicro)).toBeGreaterThan(0n);
    expect(stalls["300 MB JSON answer (OpenAI)"]).toBeLessThan(STALL_BOUND_MS);
  }, 120_000);

  it("a 12 MB answer (under the limit) goes through", async () => {
    mock.queue.push({ padBytes: 12 * 1024 * 1024, prompt: 10, completion: 5 });
    const r = await measured("12 MB JSON answer (Anthropic, translated)", () => call("anthropic", false));
    expect(r.status).toBe(200);
    expect(r.text.length).toBeGreaterThan(12 * 1024 * 1024);
  }, 60_000);

  for (const p of PROTOCOLS)
    it(`${p}: a 200 MB event that never ends is cut with an error frame, charged, no stall`, async () => {
      mock.queue.push({ unterminatedBytes: 200 * 1024 * 1024, prompt: 10, completion: 5 });
      const name = `200 MB unterminated event (${p})`;
      const r = await measured(name, () => call(p, true));
      expect(r.status).toBe(200); // the stream had begun
      expect(r.text).toContain("upstream_event_too_large");
      expect(r.text).toContain(r.requestId);
      const row = await rowOf(r.requestId);
      expect(row.status).toBe(502);
      expect(BigInt(row.costMicro)).toBeGreaterThan(0n);
      expect(stalls[name]).toBeLessThan(STALL_BOUND_MS);
    }, 120_000);

  it("a stream that never ends is cut at the answer time limit", async () => {
    const before = mock.aborted;
    mock.queue.push({ neverEnd: { dripMs: 100 }, prompt: 10, completion: 5 });
    const started = Date.now();
    const r = await call("openai", true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    expect(r.text).toContain("upstream_answer_too_long");
    const row = await rowOf(r.requestId);
    expect(row.status).toBe(502);
    expect(BigInt(row.costMicro)).toBeGreaterThan(0n);
    await eventually(
      async () => mock.aborted,
      (n) => n > before,
      5_000,
    );
  }, 60_000);
});
