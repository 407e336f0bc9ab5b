import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";

// Issue 12, item 11 (data plane): JSON nested 10,000 deep was a 500 on a dozen endpoints (and crashed the demo
// upstream), a malformed percent-escape in a path was a 500, and Node's own parse errors got Node's bare
// answers. Each is now a 4xx in the caller's protocol shape with the request id.

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
  await gw.admin("account create", { name: "bad", balance: "10" });
  key = (await gw.admin<{ key: string }>("key create", { account: "bad", name: "k" })).key;
  await waitForKey(gw, key);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
});

type Shape = "openai" | "anthropic" | "gemini";

/** The status is 4xx and the body is the protocol's error shape, its message ending with the response's request id. */
async function expectShaped(res: Response, shape: Shape): Promise<void> {
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  const id = res.headers.get("x-gateway-request-id");
  expect(id).toMatch(/^req_/);
  const body = (await res.json()) as Record<string, { message?: string }>;
  if (shape === "openai") expect(body.error).toMatchObject({ type: expect.any(String), code: expect.any(String) });
  if (shape === "anthropic") expect(body).toMatchObject({ type: "error", error: { type: expect.any(String) } });
  if (shape === "gemini") expect(body.error).toMatchObject({ code: res.status, status: expect.any(String) });
  expect(body.error!.message).toContain(`(request id: ${id})`);
}

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.bases[0]}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body,
  });

const deepObject = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
const deepArray = (n: number) => "[".repeat(n) + "]".repeat(n);

describe("JSON nested 10,000 deep", () => {
  const endpoints: [string, Shape, (deep: string) => string][] = [
    [
      "/v1/chat/completions",
      "openai",
      (d) =>
        `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${d}}}]}`,
    ],
    ["/v1/chat/completions", "openai", (d) => `{"model":"${MODEL}","messages":[{"role":"user","content":${d}}]}`],
    [
      "/v1/messages",
      "anthropic",
      (d) =>
        `{"model":"${MODEL}","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${d}}]}`,
    ],
    [
      "/v1/messages/count_tokens",
      "anthropic",
      (d) =>
        `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${d}}]}`,
    ],
    [
      `/v1beta/models/${MODEL}:generateContent`,
      "gemini",
      (d) =>
        `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":${d}}]}]}`,
    ],
    [
      `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`,
      "gemini",
      (d) => `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"responseSchema":${d}}}`,
    ],
  ];
  for (const [path, shape, body] of endpoints) {
    it(`${path} (${shape})`, async () => {
      for (const deep of [deepObject(10_000), deepArray(10_000), deepObject(100_000)])
        await expectShaped(await post(path, body(deep)), shape);
    });
  }
  it("the demo upstream keeps answering", async () => {
    const res = await post(
      "/v1/chat/completions",
      JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "still there?" }] }),
    );
    expect(res.status).toBe(200);
  });
});

describe("malformed percent-escapes in paths", () => {
  it("are 400s in the path's protocol", async () => {
    await expectShaped(
      await post(`/v1beta/models/%E0%A4%A:generateContent`, "{}", { "x-goog-api-key": key }),
      "gemini",
    );
    await expectShaped(await post(`/v1beta/models/%:streamGenerateContent`, "{}", { "x-goog-api-key": key }), "gemini");
    await expectShaped(
      await fetch(`${gw.bases[0]}/v1/models/%E0%A4%A`, { headers: { authorization: `Bearer ${key}` } }),
      "openai",
    );
    await expectShaped(
      await fetch(`${gw.bases[0]}/v1beta/models/%zz`, { headers: { "x-goog-api-key": key } }),
      "gemini",
    );
  });
  it("the console's static handler answers them with a 400 too", async () => {
    const res = await fetch(`${gw.bases[0]}/assets/%E0%A4%A.js`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "the path has a malformed percent-escape" });
  });
});

/** Sends raw bytes and returns the raw answer (Node's parser refuses these before any handler runs). */
function raw(bytes: string): Promise<string> {
  const { hostname, port } = new URL(gw.bases[0]!);
  return new Promise((resolve) => {
    const sock = connect(Number(port), hostname, () => sock.write(bytes));
    let out = "";
    sock.on("data", (d) => (out += d));
    sock.on("error", () => undefined);
    sock.on("close", () => resolve(out));
  });
}

function parseRaw(answer: string): Response {
  const [head, ...rest] = answer.split("\r\n\r\n");
  const [statusLine, ...lines] = head!.split("\r\n");
  const headers = new Headers(
    lines.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()] as [string, string]),
  );
  return new Response(rest.join("\r\n\r\n"), { status: Number(statusLine!.split(" ")[1]), headers });
}

describe("Node's own parse errors", () => {
  it("431 for headers that are too large", async () => {
    const res = parseRaw(await raw(`POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`));
    expect(res.status).toBe(431);
    await expectShaped(res, "anthropic");
  });
  it("400 for a bad Content-Length", async () => {
    const res = parseRaw(await raw(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n`));
    expect(res.status).toBe(400);
    await expectShaped(res, "openai");
  });
  it("417 for an Expect Node does not know", async () => {
    const res = parseRaw(
      await raw(
        `POST /v1beta/models/${MODEL}:generateContent HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      ),
    );
    expect(res.status).toBe(417);
    await expectShaped(res, "gemini");
  });
  it("400 for a request line that is not HTTP", async () => {
    const res = parseRaw(await raw(`HELLO\r\n\r\n`));
    expect(res.status).toBe(400);
    await expectShaped(res, "openai");
  });
});
