import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// A non-streamed call the client leaves before the answer (issue 16): the upstream has the request and does
// the work, so the gateway still awaits its answer and charges it from the upstream's usage (status 499,
// client_closed), once; by estimate, flagged, when the answer carries no usage; nothing when the upstream
// fails, and then without retrying for a client that is gone. Both relays: the OpenAI client's passthrough
// and the Anthropic client's translation.

const MODEL = "left-chat-2025-01-01";
// Per 1M tokens: input 2, output 10. 1000 prompt + 200 completion tokens: 2000 + 2000 micro-units.
const EXACT = 4000n;

let mock: OpenAIMock;
let gw: Gateway;
let apiKey: string;

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-left");
  gw = await startGateway("embedded", {
    env: { LEFT_UPSTREAM_KEY: "sk-upstream-left" },
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: mock.url, apiKey: "${LEFT_UPSTREAM_KEY}" }],
      models: [{ id: MODEL, price: { input: 2, output: 10 }, routes: [{ upstream: "mock", model: "gpt-left" }] }],
    },
  });
  await gw.admin("account create", { name: "leavers", balance: "10" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "leavers" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

interface Row {
  requestId: string;
  status: number;
  costMicro: string;
  estimated: boolean;
  promptTokens: number;
  completionTokens: number;
}
const rows = () => gw.admin<Row[]>("usage list", { account: "leavers", limit: "50" });

type Client = "openai" | "anthropic";

/** Sends a non-streamed call and leaves once the upstream has it; resolves when the client gave up. */
async function leaveEarly(client: Client): Promise<void> {
  const seen = mock.requests.length;
  const abort = new AbortController();
  const params = { model: MODEL, messages: [{ role: "user" as const, content: "answer slowly" }] };
  const pending =
    client === "openai"
      ? new OpenAI({ baseURL: `${gw.bases[0]}/v1`, apiKey, maxRetries: 0 }).chat.completions.create(params, {
          signal: abort.signal,
        })
      : new Anthropic({ baseURL: gw.bases[0], apiKey, maxRetries: 0 }).messages.create(
          { ...params, max_tokens: 300 },
          { signal: abort.signal },
        );
  await eventually(
    () => Promise.resolve(mock.requests.length),
    (n) => n === seen + 1,
    10_000,
    5,
  );
  abort.abort();
  await expect(pending).rejects.toThrow();
}

describe("a non-streamed call the client leaves", () => {
  for (const client of ["openai", "anthropic"] as const) {
    it(`is charged from the upstream's usage once the answer comes (${client} client)`, async () => {
      const before = await gw.balance("leavers");
      const known = (await rows()).length;
      mock.queue.push({ content: "worth paying for", promptTokens: 1000, completionTokens: 200, delayMs: 300 });
      await leaveEarly(client);
      const [row] = await eventually(rows, (r) => r.length === known + 1, 10_000, 20);
      expect(row).toMatchObject({
        status: 499,
        estimated: false,
        promptTokens: 1000,
        completionTokens: 200,
        costMicro: EXACT.toString(),
      });
      await eventually(
        () => gw.balance("leavers"),
        (b) => before - b === EXACT,
        10_000,
      );
      // Once: one row for the request, and the wallet moved by the amount once.
      const all = await rows();
      expect(all.filter((r) => r.requestId === row!.requestId)).toHaveLength(1);
      expect(all).toHaveLength(known + 1);
      expect(before - (await gw.balance("leavers"))).toBe(EXACT);
    });
  }

  it("is charged by estimate, flagged, when the answer carries no usage", async () => {
    const known = (await rows()).length;
    mock.queue.push({ content: "no usage here", omitUsage: true, delayMs: 300 });
    await leaveEarly("openai");
    const [row] = await eventually(rows, (r) => r.length === known + 1, 10_000, 20);
    expect(row).toMatchObject({ status: 499, estimated: true });
    expect(row!.promptTokens).toBeGreaterThan(0);
    expect(BigInt(row!.costMicro)).toBeGreaterThan(0n);
  });

  it("costs nothing when the upstream fails after the client left, and is not retried", async () => {
    const before = await gw.balance("leavers");
    const known = (await rows()).length;
    // A 500 is retried for a client that waits; the second script would answer the retry.
    mock.queue.push({ status: 500, delayMs: 300 }, { content: "nobody asked", promptTokens: 10, completionTokens: 5 });
    const seen = mock.requests.length;
    await leaveEarly("openai");
    const [row] = await eventually(rows, (r) => r.length === known + 1, 10_000, 20);
    expect(row).toMatchObject({ status: 499, costMicro: "0" });
    expect(mock.requests.length).toBe(seen + 1);
    expect(await gw.balance("leavers")).toBe(before);
    mock.queue.length = 0;
  });
});
