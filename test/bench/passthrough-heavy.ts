import { createServer, type IncomingHttpHeaders } from "node:http";
import { pipeline } from "node:stream/promises";
import { Pool } from "undici";

// The floor: the least a Node proxy can do. node:http in, an undici keep-alive pool out, headers and body
// passed through as they are (request and response bodies streamed), no parsing, no policy, no accounting.
//   PORT       listen port (0: any; printed as JSON on stdout)
//   UPSTREAM   the upstream origin, e.g. http://127.0.0.1:9000

const upstream = process.env.UPSTREAM;
if (!upstream) throw new Error("UPSTREAM is required");
const pool = new Pool(upstream, { connections: 1024, pipelining: 1, keepAliveTimeout: 30_000 });
const hopByHop = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "proxy-connection",
  "upgrade",
  "host",
  "te",
  "trailer",
]);

const strip = (
  h: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> => {
  const out: Record<string, string | string[]> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined && !hopByHop.has(k)) out[k] = v;
  }
  return out;
};

const server = createServer((req, res) => {
  const abort = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  pool
    .request({
      path: req.url ?? "/",
      method: (req.method ?? "GET") as "POST",
      headers: strip(req.headers),
      body: hasBody ? req : null,
      signal: abort.signal,
    })
    .then(async (up) => {
      res.writeHead(up.statusCode, strip(up.headers));
      await pipeline(up.body, res);
    })
    .catch(() => {
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "application/json" });
        res.end('{"error":{"message":"upstream unreachable","type":"upstream_error","param":null,"code":null}}');
      } else res.destroy();
    });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ listening: port })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
