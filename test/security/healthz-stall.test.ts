import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { healthzPoller } from "./healthz-poller.ts";

// Issue 12 asks for the longest stall of /healthz that any single request causes (goal: under 50 ms). One
// client polls /healthz back to back on a kept-alive connection while the nastiest single requests we know
// go in one at a time: bodies of the largest accepted size, 4 MB (a huge string, 100,000 small messages, JSON nested far too deep), the
// same through Anthropic's count_tokens and Gemini, and unauthenticated GraphQL fragment fan-out. The figure
// reported is the slowest /healthz answer seen while each one ran, next to the slowest with nothing else
// running.

const MODEL = "demo-chat-2025-01-01";
let gw: Gateway;
let key: string;

beforeAll(async () => {
  gw = await startGateway("embedded", {
    config: {
      upstreams: [{ name: "demo", protocol: "demo", baseUrl: "demo://local" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "demo", model: "demo" }] }],
    },
  });
  await gw.admin("account create", { name: "stall", balance: "1000000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "stall", name: "k" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
});

// Bodies are encoded once, up front (postOnce): encoding 4 MB in this process would stall the poller here,
// not the server.
const send = (path: string, body: Uint8Array<ArrayBuffer>, headers: Record<string, string>) =>
  fetch(`${gw.bases[0]}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body,
  }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

/** the largest body the gateway accepts by default (MODELGATE_MAX_BODY_BYTES, 4 MiB), less a margin */
const MAX_BODY = 4 * 1024 * 1024 - 4096;
const bigString = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x".repeat(MAX_BODY - 200) }] });
const manyMessages = JSON.stringify({
  model: MODEL,
  messages: Array.from({ length: 100_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "hello there" })),
});
const someMessages = JSON.stringify({
  model: MODEL,
  messages: Array.from({ length: 12_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "hello there" })),
});
const deep =
  '{"model":"' + MODEL + '","messages":' + "[".repeat(MAX_BODY / 2 - 100) + "]".repeat(MAX_BODY / 2 - 100) + "}";
const fanOut = (n: number) => {
  let doc = "query{...F0}";
  for (let i = 0; i < n; i++) doc += ` fragment F${i} on Query{...F${i + 1} ...F${i + 1}}`;
  return JSON.stringify({ query: `${doc} fragment F${n} on Query{__typename}` });
};

it("no single request stalls /healthz for long", async () => {
  const poller = healthzPoller(gw.bases[0]!);
  const bodies = new Map<string, Uint8Array<ArrayBuffer>>();
  const once = (text: string) => bodies.get(text) ?? bodies.set(text, new TextEncoder().encode(text)).get(text)!;
  const postOnce = (path: string, text: string, headers: Record<string, string> = {}) => {
    const body = once(text);
    return () => send(path, body, headers);
  };
  const cases: [string, () => Promise<unknown>][] = [
    ["OpenAI, 4 MB string", postOnce("/v1/chat/completions", bigString)],
    ["OpenAI, 100,000 messages", postOnce("/v1/chat/completions", manyMessages)],
    ["OpenAI, 4 MB nested too deep", postOnce("/v1/chat/completions", deep)],
    [
      "Anthropic, 4 MB string",
      postOnce("/v1/messages", bigString.replace('"messages"', '"max_tokens":5,"messages"'), {
        "anthropic-version": "2023-06-01",
      }),
    ],
    [
      "Anthropic count_tokens, 100,000 messages",
      postOnce("/v1/messages/count_tokens", manyMessages, { "anthropic-version": "2023-06-01" }),
    ],
    ["OpenAI, 12,000 messages (under the container limit)", postOnce("/v1/chat/completions", someMessages)],
    [
      "Gemini, 4 MB string",
      postOnce(
        `/v1beta/models/${MODEL}:generateContent`,
        JSON.stringify({ contents: [{ role: "user", parts: [{ text: "x".repeat(MAX_BODY - 200) }] }] }),
        { "x-goog-api-key": key },
      ),
    ],
    ["GraphQL fragment fan-out (n=22), no credentials", postOnce("/graphql", fanOut(22))],
  ];
  const results: Record<string, number> = { "nothing else": Math.round(await poller.worstQuiet()) };
  for (const [name, work] of cases) results[name] = Math.round(await poller.worstDuring(work));
  console.log(
    `/healthz worst answer (ms) while each request ran:\n${Object.entries(results)
      .map(([k, v]) => `  ${String(v).padStart(5)}  ${k}`)
      .join("\n")}`,
  );
  // The goal is 50 ms, and the figures above are what the closing note reports. A wall-clock bound in a test
  // can only catch the pathological: a loaded 2-core CI machine has shown 330 ms for a 50 ms case, so the
  // bound is a second, which still fails on the multi-second stalls this test was written against.
  for (const [name, ms] of Object.entries(results)) expect(ms, name).toBeLessThan(1_000);
});
