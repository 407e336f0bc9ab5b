import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MockUpstream } from "../mocks/script.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { type Gateway, type Mode, startGateway, waitForKey } from "../helpers/gateway.ts";

// Issue 12, item 9: 200 idle sockets stayed open 130 s and bodies dripped one byte at a time stayed open
// indefinitely, unauthenticated /graphql included. Every server now has header, body (whole request),
// keep-alive and idle-socket timeouts. Here they are set short (1 s headers, 2 s request) and a slow client
// tries each server: the data plane and the control plane in distributed mode, and the one embedded
// process. A stream that keeps flowing for longer than all of those limits must not be cut.

const MODEL = "slow-chat-2025-01-01";
const TIMEOUTS = {
  MODELGATE_HEADERS_TIMEOUT_MS: "1000",
  MODELGATE_REQUEST_TIMEOUT_MS: "2000",
  MODELGATE_KEEPALIVE_TIMEOUT_MS: "1000",
  MODELGATE_SOCKET_IDLE_TIMEOUT_MS: "2500",
  MODELGATE_TIMEOUT_CHECK_MS: "200",
};
// The limit plus the sweep interval plus scheduling slack on a busy 2-core machine.
const SLACK = 1_500;

interface Probe {
  closedAfterMs: number;
  answer: string;
}

/** Opens a socket, runs `act` on it and resolves when the server closes it (or fails after `maxMs`). */
function probe(base: string, act: (write: (s: string) => void) => (() => void) | void, maxMs = 10_000): Promise<Probe> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const sock = connect(Number(port), hostname);
    let answer = "";
    let stop: (() => void) | void;
    const guard = setTimeout(() => {
      sock.destroy();
      reject(new Error(`socket still open after ${maxMs} ms; answer so far: ${answer.slice(0, 200)}`));
    }, maxMs);
    sock.on("data", (d) => (answer += d));
    sock.on("error", () => undefined);
    sock.on("close", () => {
      clearTimeout(guard);
      stop?.();
      resolve({ closedAfterMs: Date.now() - started, answer });
    });
    sock.on("connect", () => (stop = act((s) => void (sock.writable && sock.write(s)))));
  });
}

/** Writes one byte every `everyMs` until stopped. */
const drip = (write: (s: string) => void, head: string, everyMs = 100) => {
  write(head);
  const t = setInterval(() => write("x"), everyMs);
  return () => clearInterval(t);
};

const expectTimedOut = (p: Probe, limitMs: number, shape: "openai" | "anthropic" | "json") => {
  expect(p.closedAfterMs).toBeLessThan(limitMs + SLACK);
  if (p.answer === "") return; // closed without a word (the idle-socket and keep-alive cases)
  expect(p.answer).toMatch(/^HTTP\/1\.1 408/);
  const id = /X-Gateway-Request-Id: (req_\w+)/i.exec(p.answer)?.[1];
  expect(id).toBeDefined();
  const body = JSON.parse(p.answer.slice(p.answer.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>;
  if (shape === "anthropic") expect(body).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  if (shape === "openai") expect(body).toMatchObject({ error: { code: "request_timeout" } });
  expect(JSON.stringify(body)).toContain(`(request id: ${id})`);
};

describe.each<Mode>(["embedded", "distributed"])("slow clients, %s mode", (mode) => {
  let gw: Gateway;
  let upstream: MockUpstream;
  let key: string;

  beforeAll(async () => {
    // 16 chunks 200 ms apart: a stream of more than 3 s, longer than the request and idle limits above.
    upstream = await startOpenAIUpstream({
      fallback: { text: Array.from({ length: 16 }, (_, i) => `c${i} `), delayMs: 200 },
    });
    gw = await startGateway(mode, {
      config: {
        upstreams: [{ name: "mock", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
        models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "mock", model: "m" }] }],
      },
      env: TIMEOUTS,
      replicas: 1,
    });
    await gw.admin("account create", { name: "slow", balance: "10" });
    key = (await gw.admin<{ key: string }>("key create", { account: "slow", name: "k" })).key;
    await waitForKey(gw, key);
  }, 180_000);

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const servers = () =>
    mode === "embedded"
      ? [["embedded", gw.bases[0]!]]
      : [
          ["data plane", gw.bases[0]!],
          ["control plane", gw.controlPlaneBase],
        ];

  it("idle sockets that never send a byte are closed after the headers timeout", async () => {
    for (const [, base] of servers()) {
      const probes = await Promise.all(Array.from({ length: 50 }, () => probe(base!, () => undefined)));
      for (const p of probes) expectTimedOut(p, 1_000, "openai");
    }
  });

  it("headers dripped one byte at a time are cut at the headers timeout", async () => {
    for (const [, base] of servers()) {
      const p = await probe(base!, (w) => drip(w, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: "));
      expectTimedOut(p, 1_000, "openai");
    }
  });

  it("a body dripped one byte at a time is cut at the request timeout, in the caller's shape", async () => {
    for (const [name, base] of servers()) {
      const path = name === "control plane" ? "/graphql" : "/v1/messages";
      const p = await probe(base!, (w) =>
        drip(
          w,
          `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
        ),
      );
      expectTimedOut(p, 2_000, path === "/v1/messages" ? "anthropic" : "json");
    }
    if (mode === "embedded") {
      // Unauthenticated /graphql on the embedded server too.
      const p = await probe(gw.bases[0]!, (w) =>
        drip(
          w,
          "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
        ),
      );
      expectTimedOut(p, 2_000, "json");
    }
  });

  it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
    for (const [, base] of servers()) {
      const p = await probe(base!, (w) => w("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
      expect(p.answer).toMatch(/^HTTP\/1\.1 200/);
      expect(p.closedAfterMs).toBeLessThan(1_000 + SLACK);
    }
  });

  it("a stream that keeps flowing for longer than every limit is never cut", async () => {
    const started = Date.now();
    const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(Date.now() - started).toBeGreaterThan(3_000);
    for (let i = 0; i < 16; i++) expect(text).toContain(`c${i} `);
    expect(text.trim().endsWith("data: [DONE]")).toBe(true);
  });
});
