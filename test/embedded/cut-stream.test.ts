import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";

// Cut-off streams in embedded mode (issue 16 part 3; the distributed side is test/services/reconciliation.test.ts):
// a client that leaves before the usage came is charged by estimate at once, and when the upstream finishes
// afterwards its exact usage replaces the estimate, once, in the usage log and the wallet.

const MODEL = "cut-chat-2025-01-01";
// 400 uncached × 3 + 200 reads × 3 (no cachedInput price: the input price) + 400 1-hour writes × 6 (2 × input)
// + 50 output × 15, per 1M tokens
const EXACT = 400n * 3n + 200n * 3n + 400n * 6n + 50n * 15n;

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
  estimated: boolean;
  promptTokens: number;
  completionTokens: number;
  cacheWrite1hTokens: number;
  endUser: string | null;
}

let mock: MockUpstream;
let gw: Gateway;
let apiKey: string;

beforeAll(async () => {
  mock = await startAnthropicUpstream();
  gw = await startGateway("embedded", {
    env: { MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY },
    config: {
      upstreams: [{ name: "claude", protocol: "anthropic", baseUrl: mock.url, apiKey: "${MOCK_UPSTREAM_KEY}" }],
      models: [
        { id: MODEL, price: { input: 3, output: 15 }, routes: [{ upstream: "claude", model: "claude-upstream" }] },
      ],
    },
  });
  await gw.admin("account create", { name: "cuts", balance: "10" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "cuts" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

const rows = () => gw.admin<Row[]>("usage list", { account: "cuts", limit: "50" });

describe("a stream the client cuts", () => {
  it("is charged by estimate, then by the upstream's exact usage once it finishes", async () => {
    const before = await gw.balance("cuts");
    // The upstream's message_delta, which carries the output count, waits until the test has seen the estimate:
    // timed by a delay instead, a slow machine could settle the exact count before the estimate was ever read.
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    mock.reply({
      text: ["a", "b", "c", "d", "e", "f"],
      usage: { promptTokens: 1000, cachedTokens: 200, cacheWrite1hTokens: 400, completionTokens: 50 },
      delayMs: 100,
      holdFinal: finished,
    });
    const sdk = new OpenAI({ baseURL: `${gw.bases[0]}/v1`, apiKey, maxRetries: 0 });
    const stream = await sdk.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      user: "cutter",
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) break;

    // The estimate first: the prompt and cache classes message_start reported, the output delivered so far.
    let estimate: Row | undefined;
    try {
      [estimate] = await eventually(rows, (r) => r.length === 1, 10_000, 20);
    } finally {
      finish();
    }
    expect(estimate).toMatchObject({
      status: 499,
      estimated: true,
      promptTokens: 1000,
      cacheWrite1hTokens: 400,
      endUser: "cutter",
    });
    expect(BigInt(estimate!.costMicro)).toBeLessThan(EXACT);

    // Then the exact count, once the upstream finished; the wallet moves by the exact amount in all.
    const [exact] = await eventually(rows, (r) => r[0]?.estimated === false, 10_000, 50);
    expect(exact).toMatchObject({
      requestId: estimate!.requestId,
      status: 499,
      costMicro: EXACT.toString(),
      completionTokens: 50,
    });
    await eventually(
      () => gw.balance("cuts"),
      (b) => before - b === EXACT,
      10_000,
    );
    expect(await rows()).toHaveLength(1);
  });

  it("stays estimated when the upstream breaks off too", async () => {
    const before = (await rows()).length;
    mock.reply({
      text: ["a", "b", "c", "d"],
      usage: { promptTokens: 300, completionTokens: 90 },
      dropAfterChunks: 2,
      delayMs: 20,
    });
    const stream = new Anthropic({ baseURL: gw.bases[0], apiKey, maxRetries: 0 }).messages.stream({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    await expect(stream.finalMessage()).rejects.toThrow();
    const [row] = await eventually(rows, (r) => r.length === before + 1, 10_000);
    expect(row).toMatchObject({ status: 502, estimated: true, promptTokens: 300 });
    expect(BigInt(row!.costMicro)).toBeGreaterThan(0n);
  });
});
