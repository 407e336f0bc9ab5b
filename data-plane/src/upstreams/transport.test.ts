import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallAbort } from "./call-abort.ts";
import { UndiciTransport, type UpstreamRequest } from "./transport.ts";

// The transport against a real local HTTP server: bodies whole and streamed, backpressure, aborts, timeouts.

type Route = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Route>();
const closed: string[] = [];
let server: Server;
let base = "";
const transport = new UndiciTransport();

beforeAll(async () => {
  server = createServer((req, res) => {
    res.on("close", () => {
      if (!res.writableFinished) closed.push(req.url ?? "");
    });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () =>
      routes.get(req.url ?? "")!(Object.assign(req, { text: Buffer.concat(chunks).toString() }), res),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await transport.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const call = (path: string, over: Partial<UpstreamRequest> = {}) =>
  transport.send({
    url: `${base}${path}`,
    headers: { "content-type": "application/json" },
    body: '{"q":"é"}',
    signal: new AbortController().signal,
    connectTimeoutMs: 1000,
    firstByteTimeoutMs: 2000,
    idleTimeoutMs: 2000,
    ...over,
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("UndiciTransport", () => {
  it("sends the body and reads an answer whole, with a character split across chunks intact", async () => {
    routes.set("/whole", (req, res) => {
      res.writeHead(201, { "content-type": "application/json", "x-up": "1" });
      const bytes = Buffer.from(
        `{"echo":${JSON.stringify((req as IncomingMessage & { text: string }).text)},"s":"日本"}`,
      );
      res.write(bytes.subarray(0, bytes.length - 4)); // cuts 本 in the middle
      setTimeout(() => res.end(bytes.subarray(bytes.length - 4)), 10);
    });
    const r = await call("/whole");
    expect(r.status).toBe(201);
    expect(r.headers["x-up"]).toBe("1");
    expect(JSON.parse(await r.text())).toEqual({ echo: '{"q":"é"}', s: "日本" });
  });

  it("streams a large body chunk by chunk to a slow reader, every byte in order", async () => {
    const total = 1024 * 1024;
    routes.set("/big", (_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const block = Buffer.alloc(16 * 1024);
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          for (let i = 0; i < block.length; i++) block[i] = (sent + i) % 251;
          sent += block.length;
          if (!res.write(Buffer.from(block))) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    });
    const r = await call("/big");
    let received = 0;
    let ok = true;
    for await (const chunk of r.body) {
      for (let i = 0; i < chunk.length; i++) if (chunk[i] !== (received + i) % 251) ok = false;
      received += chunk.length;
      if (received < 256 * 1024) await sleep(1); // slow at first: undici must pause and resume
    }
    expect(received).toBe(total);
    expect(ok).toBe(true);
  });

  it.each([
    ["an AbortController's signal", "/hang-signal", () => new AbortController()],
    ["the request path's CallAbort", "/hang-call-abort", () => new CallAbort()],
  ])("aborts a call when %s fires, before or during the body", async (_name, path, make) => {
    routes.set(path, (_req, res) => {
      res.writeHead(200);
      res.write("first");
    });
    const ac = make();
    const r = await call(path, { signal: "signal" in ac ? ac.signal : ac });
    const it = r.body[Symbol.asyncIterator]();
    expect((await it.next()).value.toString()).toBe("first");
    ac.abort();
    await expect(it.next()).rejects.toThrow();
    await expect.poll(() => closed.includes(path)).toBe(true);

    const early = make();
    early.abort();
    await expect(call(path, { signal: "signal" in early ? early.signal : early })).rejects.toThrow();
  });

  it("frees the connection when the reader stops early", async () => {
    routes.set("/stop", (_req, res) => {
      res.writeHead(200);
      const t = setInterval(() => res.write("tick"), 5);
      res.on("close", () => clearInterval(t));
    });
    const r = await call("/stop");
    for await (const chunk of r.body) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    await expect.poll(() => closed.includes("/stop")).toBe(true);
  });

  it("fails with undici's timeout codes: no head in time, or a body that stalls", async () => {
    routes.set("/slow-head", (_req, res) => void setTimeout(() => res.end("late"), 1500));
    await expect(call("/slow-head", { firstByteTimeoutMs: 200 })).rejects.toMatchObject({
      code: "UND_ERR_HEADERS_TIMEOUT",
    });
    routes.set("/stall", (_req, res) => {
      res.writeHead(200);
      res.write("some");
    });
    const r = await call("/stall", { idleTimeoutMs: 200 });
    await expect(r.text()).rejects.toMatchObject({ code: "UND_ERR_BODY_TIMEOUT" });
  });

  it("reports a refused connection as a connect error", async () => {
    await expect(
      transport.send({
        url: "http://127.0.0.1:1/x",
        headers: {},
        body: "",
        signal: new AbortController().signal,
        connectTimeoutMs: 500,
        firstByteTimeoutMs: 500,
        idleTimeoutMs: 500,
      }),
    ).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});
