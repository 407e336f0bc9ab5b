import { type Server, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { type OddUpstream, startOddUpstream } from "../mocks/odd-upstream.ts";

// Issue 25 item 2: a prompt processed for free by cutting the stream. A client streamed a ~1M-token prompt,
// read the status line (or the first, role-only chunk) and closed: the call was charged 0 although the
// upstream had the whole prompt. Now a call is charged at least the prompt's estimate once the upstream
// answered (its status line came), however the client leaves, and the upstream's exact usage replaces the
// estimate when it comes within the drain time. A client that leaves before the status line is waited for:
// the upstream has the request. A client that never finished sending its body costs nothing: the upstream
// never got it.

const MODEL = "cut-charge-2025-01-01";
// 1 micro-unit a prompt token, 2 an output token (prices are per 1M tokens, in units of 10^6 micro-units)
const PROMPT = "y".repeat(400_000); // ~100,000 tokens by the gateway's estimate
const EXACT_PROMPT = 100_000;

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
  estimated: boolean;
  promptTokens: number;
}

let mock: OddUpstream;
// An embeddings upstream that holds each answer until the test releases it (the odd mock has no embeddings).
let embeddings: Server;
const embeddingsHeld: (() => void)[] = [];
let gw: Gateway;
let key: string;
let host: string;
let port: number;

beforeAll(async () => {
  mock = await startOddUpstream();
  embeddings = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      embeddingsHeld.push(() =>
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            object: "list",
            model: "emb",
            data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
            usage: { prompt_tokens: EXACT_PROMPT, total_tokens: EXACT_PROMPT },
          }),
        ),
      );
    });
  });
  await new Promise<void>((r) => embeddings.listen(0, "127.0.0.1", r));
  const embeddingsUrl = `http://127.0.0.1:${(embeddings.address() as AddressInfo).port}/v1`;
  gw = await startGateway("embedded", {
    config: {
      upstreams: [
        { name: "odd-openai", protocol: "openai", baseUrl: mock.url.openai },
        { name: "odd-anthropic", protocol: "anthropic", baseUrl: mock.url.anthropic },
        { name: "held-embeddings", protocol: "openai", baseUrl: embeddingsUrl },
      ],
      models: [
        { id: MODEL, price: { input: 1, output: 2 }, routes: [{ upstream: "odd-openai", model: MODEL }] },
        { id: `${MODEL}-a`, price: { input: 1, output: 2 }, routes: [{ upstream: "odd-anthropic", model: "other" }] },
        {
          id: `${MODEL}-e`,
          type: "embedding",
          price: { input: 1, output: 0 },
          routes: [{ upstream: "held-embeddings", model: "emb" }],
        },
      ],
    },
  });
  await gw.admin("account create", { name: "cutter", balance: "100" });
  key = (await gw.admin<{ key: string }>("key create", { account: "cutter" })).key;
  await waitForKey(gw, key);
  const base = new URL(gw.bases[0]!);
  host = base.hostname;
  port = Number(base.port);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
  embeddings?.closeAllConnections();
  await new Promise((r) => embeddings?.close(r));
});

const rows = () => gw.admin<Row[]>("usage list", { account: "cutter", limit: "100" });
const rowOf = async (requestId: string, ok: (r: Row) => boolean = () => true): Promise<Row> =>
  (await eventually(rows, (r) => r.some((x) => x.requestId === requestId && ok(x)), 15_000)).find(
    (x) => x.requestId === requestId,
  )!;

const body = (model: string, stream: boolean) =>
  JSON.stringify({ model, stream, messages: [{ role: "user", content: PROMPT }] });

/**
 * Sends a call and leaves it at `when`: on the status line, on the first chunk of the body, or `afterMs`
 * after the request went out (before any answer). Resolves with the request id when the gateway sent one.
 */
function leaveAt(when: "status" | "first-chunk" | "received", model = MODEL, stream = true): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const data = body(model, stream);
    const req = request(
      {
        host,
        port,
        method: "POST",
        path: "/v1/chat/completions",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(data),
        },
      },
      (res) => {
        const id = String(res.headers["x-request-id"] ?? "");
        if (when === "status") {
          res.destroy();
          req.destroy();
          resolve(id);
          return;
        }
        res.once("data", () => {
          res.destroy();
          req.destroy();
          resolve(id);
        });
      },
    );
    req.on("error", (err) => (when === "received" ? resolve(null) : reject(err)));
    const sent = mock.received.length;
    req.end(data);
    // Before any answer: once the upstream has the whole request.
    if (when === "received")
      void eventually(
        async () => mock.received.length,
        (n) => n > sent,
        10_000,
      ).then(() => {
        req.destroy();
        resolve(null);
      }, reject);
  });
}

/**
 * How long after a client left the upstream's answer is released. That the gateway has seen the close cannot be
 * observed from outside, so this is a bounded window, not a wait for an event: it only decides whether the old
 * behaviour (the answer arriving after the close went uncharged) is caught; with the fix the row is the same
 * whichever comes first, so a slow machine can make it miss a regression, never fail a correct gateway.
 */
const CLOSE_SEEN_MS = 300;

describe("a call the client leaves once the upstream has its prompt", () => {
  it("streamed, left on the status line: charged, and the upstream's count replaces the estimate", async () => {
    let end!: () => void;
    mock.queue.push({ text: [], prompt: EXACT_PROMPT, completion: 5, holdEnd: new Promise<void>((r) => (end = r)) });
    const id = (await leaveAt("status"))!;
    const estimate = await rowOf(id).finally(end);
    expect(estimate).toMatchObject({ status: 499 });
    expect(BigInt(estimate.costMicro)).toBeGreaterThanOrEqual(BigInt(EXACT_PROMPT));
    const row = await rowOf(id, (r) => !r.estimated);
    expect(row).toMatchObject({ status: 499, promptTokens: EXACT_PROMPT });
    expect(BigInt(row.costMicro)).toBe(BigInt(EXACT_PROMPT + 5 * 2));
  });

  it("streamed, left on the first (role-only) chunk: charged at least the prompt's estimate", async () => {
    // The upstream never sends its usage: the estimate stands.
    mock.queue.push({ text: [], noUsage: true, neverEnd: { dripMs: 50 } });
    const id = (await leaveAt("first-chunk"))!;
    const row = await rowOf(id);
    expect(row).toMatchObject({ status: 499, estimated: true });
    expect(row.promptTokens).toBeGreaterThanOrEqual(EXACT_PROMPT);
    expect(BigInt(row.costMicro)).toBeGreaterThanOrEqual(BigInt(EXACT_PROMPT));
  });

  it("translated (Anthropic upstream), left on the status line: charged", async () => {
    let end!: () => void;
    mock.queue.push({ text: [], prompt: EXACT_PROMPT, completion: 5, holdEnd: new Promise<void>((r) => (end = r)) });
    const id = (await leaveAt("status", `${MODEL}-a`))!;
    const row = await rowOf(id).finally(end);
    expect(row.status).toBe(499);
    expect(BigInt(row.costMicro)).toBeGreaterThanOrEqual(BigInt(EXACT_PROMPT));
  });

  for (const stream of [true, false])
    it(`${stream ? "streamed" : "not streamed"}, left before the status line: charged once the upstream answers`, async () => {
      let open!: () => void;
      const before = (await rows()).length;
      mock.queue.push({ prompt: EXACT_PROMPT, completion: 5, release: new Promise<void>((r) => (open = r)) });
      // The upstream has the whole request before the client goes; it answers only after.
      await leaveAt("received", MODEL, stream).finally(() => setTimeout(open, CLOSE_SEEN_MS));
      const [row] = await eventually(rows, (r) => r.length === before + 1, 15_000);
      expect(row).toMatchObject({ status: 499, promptTokens: EXACT_PROMPT });
      expect(BigInt(row!.costMicro)).toBe(BigInt(EXACT_PROMPT + 10));
    });

  it("a client that leaves while still sending its body costs nothing: the upstream never got it", async () => {
    const before = (await rows()).length;
    const sent = mock.received.length;
    await new Promise<void>((resolve) => {
      const req = request({
        host,
        port,
        method: "POST",
        path: "/v1/chat/completions",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": 1_000_000 },
      });
      req.on("error", () => resolve());
      req.write(body(MODEL, true).slice(0, 1000), () => {
        req.destroy();
        resolve();
      });
    });
    // A call that follows is accounted; the abandoned one never reached the upstream nor the usage log.
    mock.queue.push({ prompt: 10, completion: 5 });
    const r = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(r.status).toBe(200);
    await eventually(rows, (x) => x.length === before + 1, 10_000);
    expect(mock.received.length).toBe(sent + 1);
  });

  it("an embeddings call left once the upstream has the input: charged its count when the answer comes", async () => {
    const before = (await rows()).length;
    const data = JSON.stringify({ model: `${MODEL}-e`, input: PROMPT });
    await new Promise<void>((resolve, reject) => {
      const req = request({
        host,
        port,
        method: "POST",
        path: "/v1/embeddings",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(data),
        },
      });
      req.on("error", () => undefined);
      req.end(data);
      // The upstream has the whole input: the client leaves before any answer, then the upstream answers.
      void eventually(
        async () => embeddingsHeld.length,
        (n) => n > 0,
        10_000,
      ).then(() => {
        req.destroy();
        resolve();
      }, reject);
    });
    // The answer is released a moment after the client left (CLOSE_SEEN_MS; a destroyed socket is a 499 either way).
    setTimeout(embeddingsHeld.shift()!, CLOSE_SEEN_MS);
    const [row] = await eventually(rows, (r) => r.length === before + 1, 15_000);
    expect(row).toMatchObject({ status: 499, promptTokens: EXACT_PROMPT });
    expect(BigInt(row!.costMicro)).toBe(BigInt(EXACT_PROMPT));
  });
});
