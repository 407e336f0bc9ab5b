import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream, type RecordedRequest } from "../mocks/script.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";

// Passthrough passes (issue 26, item 1): when the client's protocol is the upstream's, the gateway reads the key,
// the model and the stream flag and forwards everything else as the client wrote it. For each of the four
// protocols, requests with random extra fields, roles and content-block and tool types reach the upstream byte
// for byte (apart from the model when the route renames it) and are never a gateway 400. The client's vendor
// headers (anthropic-beta) and query parameters (?beta=true) go along; the upstream's own 400 reaches the client
// in its shape with the request id.

type Proto = "openai" | "anthropic" | "gemini" | "openai-responses";
const PROTOS: Proto[] = ["openai", "anthropic", "gemini", "openai-responses"];

let mocks: { openai: MockUpstream; anthropic: MockUpstream; gemini: MockUpstream };
let gw: Gateway;
let base: string;
let apiKey: string;

const mockOf = (p: Proto): MockUpstream => (p === "openai-responses" ? mocks.openai : mocks[p]);
/** same-<p> keeps the model name (the client's bytes go up as they are); ren-<p> renames it. */
const model = (kind: "same" | "ren", p: Proto) => `${kind}-${p}-2025-01-01`;

beforeAll(async () => {
  const [o, a, g] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, anthropic: a, gemini: g };
  const upstreams = PROTOS.map((p) => ({
    name: `up-${p}`,
    protocol: p,
    baseUrl: mockOf(p).url,
    apiKey: "${MOCK_UPSTREAM_KEY}",
  }));
  const models = PROTOS.flatMap((p) => [
    {
      id: model("same", p),
      price: { input: 1, output: 2 },
      routes: [{ upstream: `up-${p}`, model: model("same", p) }],
    },
    { id: model("ren", p), price: { input: 1, output: 2 }, routes: [{ upstream: `up-${p}`, model: `upstream-${p}` }] },
  ]);
  gw = await startGateway("embedded", { config: { upstreams, models }, env: { MOCK_UPSTREAM_KEY: DEFAULT_MOCK_KEY } });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "pt", balance: "100" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "pt", name: "pt" })).key;
  await waitForKey(gw, apiKey);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
});

// ---- random request material: names and values no vendor has (yet) ----

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);
const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(null));
const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(name, scalar, { maxKeys: 3 }));
/** Top-level fields the gateway does not know, never one it reads. */
const extras = fc.dictionary(
  name.filter((k) => !["model", "stream", "stream_options", "contents"].includes(k)),
  value,
  { maxKeys: 4 },
);
const role = fc.oneof(fc.constantFrom("user", "assistant", "system", "developer", "tool", "model", "function"), name);
/** A content block of a type the gateway may not know, with fields of its own. */
const block = fc
  .record({ type: fc.oneof(fc.constantFrom("text", "image", "tool_use", "document"), name) })
  .chain((b) => fc.dictionary(name, value, { maxKeys: 3 }).map((rest) => ({ ...rest, ...b })));
const message = fc.record({
  role,
  content: fc.oneof(fc.string({ maxLength: 20 }), fc.array(block, { minLength: 1, maxLength: 3 })),
});
const tool = fc
  .record({ type: name, name })
  .chain((t) => fc.dictionary(name, value, { maxKeys: 2 }).map((rest) => ({ ...rest, ...t })));

/** A body of the client's protocol with the given model; the gateway must read nothing else of it. */
function bodyOf(p: Proto, m: string, stream: boolean): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      extra: extras,
      messages: fc.array(message, { minLength: 1, maxLength: 4 }),
      tools: fc.array(tool, { maxLength: 2 }),
    })
    .map(({ extra, messages, tools }) => {
      switch (p) {
        case "openai":
          return { ...extra, model: m, messages, tools, stream };
        case "anthropic":
          return { ...extra, model: m, max_tokens: 64, messages, tools, stream };
        case "openai-responses":
          return { ...extra, model: m, input: messages, tools, stream };
        case "gemini":
          return {
            ...extra,
            contents: messages.map((msg) => ({ role: msg.role, parts: msg.content })),
            tools,
          };
      }
    });
}

/** Where each protocol's client posts, and how it names the model. */
function endpoint(p: Proto, m: string, stream: boolean): string {
  switch (p) {
    case "openai":
      return "/v1/chat/completions";
    case "anthropic":
      return "/v1/messages";
    case "openai-responses":
      return "/v1/responses";
    case "gemini":
      return `/v1beta/models/${m}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`;
  }
}

const send = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}`, ...headers },
    body,
  });

const last = (p: Proto): RecordedRequest => mockOf(p).requests.at(-1)!;

describe("same-protocol requests pass through untouched", () => {
  for (const p of PROTOS) {
    it(`${p}: random fields, roles, block and tool types reach the upstream byte for byte, never a gateway 400`, async () => {
      const cases = fc
        .tuple(fc.constantFrom<"same" | "ren">("same", "ren"), fc.boolean())
        .chain(([kind, stream]) => bodyOf(p, model(kind, p), stream).map((body) => ({ kind, stream, body })));
      await fc.assert(
        fc.asyncProperty(cases, fc.context(), async ({ kind, stream, body }, ctx) => {
          const m = model(kind, p);
          const sent = JSON.stringify(body);
          const before = mockOf(p).requests.length;
          const res = await send(endpoint(p, m, stream), sent);
          const text = await res.text();
          ctx.log(`${res.status} ${text.slice(0, 300)}`);
          expect(res.status).toBe(200);
          expect(mockOf(p).requests.length).toBe(before + 1);
          // Gemini names the model in the path; the others carry it in the body, changed only when renamed. An
          // OpenAI stream also asks for the usage chunk it is billed by (hidden from a client that did not ask).
          let expected: Record<string, unknown> = body;
          if (kind === "ren" && p !== "gemini") expected = { ...expected, model: `upstream-${p}` };
          if (p === "openai" && stream) expected = { ...expected, stream_options: { include_usage: true } };
          expect(last(p).raw).toBe(expected === body ? sent : JSON.stringify(expected));
          // The answer names the client's model, whatever the route called it.
          if (!stream) {
            const answer = JSON.parse(text) as { model?: string; modelVersion?: string };
            expect(p === "gemini" ? answer.modelVersion : answer.model).toBe(m);
          }
        }),
        { numRuns: 25 },
      );
    }, 120_000);
  }
});

describe("the client's vendor headers and query go along", () => {
  it("forwards anthropic-beta, anthropic-version and ?beta=true, never the gateway key", async () => {
    const sent = JSON.stringify({
      model: model("same", "anthropic"),
      max_tokens: 10,
      messages: [
        { role: "user", content: "hi" },
        { role: "system", content: "environment: linux" },
      ],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
    });
    const res = await fetch(`${base}/v1/messages?beta=true`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": apiKey,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27,interleaved-thinking-2025-05-14",
      },
      body: sent,
    });
    expect(res.status).toBe(200);
    const up = last("anthropic");
    expect(up.url).toBe("/v1/messages?beta=true");
    expect(up.headers["anthropic-beta"]).toBe("context-management-2025-06-27,interleaved-thinking-2025-05-14");
    expect(up.headers["x-api-key"]).toBe(DEFAULT_MOCK_KEY);
    expect(up.raw).toBe(sent);
  });

  it("keeps a Gemini client's ?key= to itself and passes its other query parameters", async () => {
    const sent = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] });
    const res = await fetch(`${base}/v1beta/models/${model("same", "gemini")}:generateContent?key=${apiKey}&future=1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: sent,
    });
    expect(res.status).toBe(200);
    const url = new URL(last("gemini").url, "http://x");
    expect(url.searchParams.get("future")).toBe("1");
    expect(url.searchParams.has("key")).toBe(false);
    expect(last("gemini").headers["x-goog-api-key"]).toBe(DEFAULT_MOCK_KEY);
  });
});

describe("the upstream validates", () => {
  for (const p of PROTOS) {
    it(`${p}: the upstream's 400 reaches the client in its shape with the request id`, async () => {
      mockOf(p).reply({ error: { status: 400, message: "messages.1.role: unknown role 'narrator'" } });
      const m = model("same", p);
      const body =
        p === "gemini"
          ? { contents: [{ role: "narrator", parts: [{ text: "x" }] }] }
          : p === "openai-responses"
            ? { model: m, input: [{ role: "narrator", content: "x" }] }
            : { model: m, max_tokens: 5, messages: [{ role: "narrator", content: "x" }] };
      const res = await send(endpoint(p, m, false), JSON.stringify(body));
      expect(res.status).toBe(400);
      const requestId = res.headers.get("x-gateway-request-id")!;
      const err = (await res.json()) as { error: { message: string } };
      expect(err.error.message).toContain("unknown role 'narrator'");
      expect(err.error.message).toContain(requestId);
    });
  }
});
