import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";
import { healthzPoller } from "./healthz-poller.ts";

// Issue 25, item 1, as a property: client Responses bodies with item references (repeated, unknown, to huge
// stored items, mixed with previous_response_id) are never a 5xx; each answer is a 2xx, or a 4xx in the
// Responses (OpenAI) error shape with the request id; and /healthz, polled on a kept-alive connection, is not
// held by any one of them. RUNS (default 60) scales it.

const MODEL = "prop-refs-2025-01-01";
const RUNS = Number(process.env.RUNS ?? 60);
let mock: MockUpstream;
let gw: Gateway;
let key: string;
let poller: ReturnType<typeof healthzPoller>;
const stored: { responseId: string; itemId: string; size: string }[] = [];

const post = async (text: string) => {
  const r = await fetch(`${gw.bases[0]}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: text,
  });
  return { status: r.status, requestId: r.headers.get("x-gateway-request-id") ?? "", text: await r.text() };
};

beforeAll(async () => {
  mock = await startOpenAIUpstream({ fallback: { text: ["ok"] } });
  gw = await startGateway("embedded", {
    config: {
      upstreams: [{ name: "chat", protocol: "openai", baseUrl: mock.url, apiKey: "${MOCK_KEY}" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "chat", model: "gpt-mock" }] }],
    },
    env: { MOCK_KEY: DEFAULT_MOCK_KEY, MODELGATE_RESPONSES_STORE: "1" },
  });
  await gw.admin("account create", { name: "prop", balance: "1000000" });
  key = (await gw.admin<{ key: string }>("key create", { account: "prop", rpm: "100000" })).key;
  await waitForKey(gw, key);
  for (const [size, chars] of [
    ["small", 100],
    ["64 KB", 64 * 1024],
    ["1.5 MB", 1_500_000],
  ] as const) {
    mock.reply({ text: ["y".repeat(chars)] });
    const a = await post(JSON.stringify({ model: MODEL, input: "hello" }));
    const body = JSON.parse(a.text) as { id: string; output: { id: string }[] };
    stored.push({ responseId: body.id, itemId: body.output[0]!.id, size });
  }
  poller = healthzPoller(gw.bases[0]!);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

const knownItem = () => fc.constantFrom(...stored.map((s) => s.itemId));
const unknownItem = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.stringMatching(/^msg_[0-9a-f]{24}_[0-9]$/),
  fc.constant(""),
  fc.constant(stored.length > 0 ? "msg_000000000000000000000000_0" : "x"),
);
const reference = (id: fc.Arbitrary<unknown>) => id.map((i) => ({ type: "item_reference", id: i }));
const message = fc.record({
  role: fc.constantFrom("user", "assistant", "system"),
  content: fc.string({ maxLength: 30 }),
});

it("references never make a 5xx, refusals carry the request id, /healthz keeps answering", async () => {
  let worst = 0;
  let worstBody = "";
  let answered = 0;
  let refused = 0;
  const baseline = Math.round(await poller.worstQuiet());
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          { weight: 4, arbitrary: fc.tuple(reference(knownItem()), fc.nat({ max: 3 })) },
          { weight: 2, arbitrary: fc.tuple(reference(knownItem()), fc.nat({ max: 2_000 })) },
          { weight: 1, arbitrary: fc.tuple(reference(unknownItem), fc.constant(1)) },
          { weight: 1, arbitrary: fc.tuple(reference(fc.anything()), fc.constant(1)) },
          { weight: 2, arbitrary: fc.tuple(message, fc.nat({ max: 3 })) },
        ),
        { minLength: 1, maxLength: 6 },
      ),
      fc.option(
        fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...stored.map((s) => s.responseId)) },
          { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
          { weight: 1, arbitrary: fc.anything() },
        ),
        { nil: undefined, freq: 2 },
      ),
      fc.boolean(),
      async (parts, previous, stream) => {
        const input = parts.flatMap(([item, n]) => Array.from({ length: n }, () => item));
        const body: Record<string, unknown> = { model: MODEL, input, stream };
        if (previous !== undefined) body.previous_response_id = previous;
        const text = JSON.stringify(body);
        let a: Awaited<ReturnType<typeof post>> | null = null;
        const held = await poller.worstDuring(async () => {
          a = await post(text);
        });
        if (held > worst)
          [worst, worstBody] = [held, `${text.length} bytes, ${input.length} items, status ${a!.status}`];
        const { status, requestId, text: answer } = a!;
        expect(status, answer.slice(0, 300)).toBeLessThan(500);
        if (status >= 400) {
          refused++;
          const err = (JSON.parse(answer) as { error: { message: string; type: string } }).error;
          expect(typeof err.type).toBe("string");
          expect(err.message).toContain(`(request id: ${requestId})`);
        } else {
          answered++;
          expect(status).toBe(200);
        }
      },
    ),
    { numRuns: RUNS },
  );
  console.log(
    `${RUNS} requests: ${answered} answered, ${refused} refused; /healthz worst ${Math.round(worst)} ms during ${worstBody} (${baseline} ms with nothing sent)`,
  );
  // The goal is 50 ms (reported above); on this shared, loaded 2-core machine the bound only catches the
  // multi-second stalls the issue was about, as healthz-stall.test.ts does.
  expect(worst).toBeLessThan(1_000);
}, 600_000);
