import cluster from "node:cluster";
import { createServer } from "node:http";
import { Pool } from "undici";

// The floor: the least a Node proxy does. node:http in, an undici keep-alive pool out (`Pool.request` with the
// request itself as the body), the upstream's status and headers written as they are, `body.pipe(res)`. No
// AbortController, no stream/promises.pipeline, no close listener, no parsing, no policy, no accounting: what
// modelgate is measured against (see docs/performance.md). passthrough-heavy.ts is the earlier, heavier floor.
//   PORT            listen port (0: any; printed as JSON on stdout)
//   UPSTREAM        the upstream origin, e.g. http://127.0.0.1:9000
//   FLOOR_WORKERS   processes on the port (node:cluster, as modelgate's MODELGATE_WORKERS); default 1

const upstream = process.env.UPSTREAM;
if (!upstream) throw new Error("UPSTREAM is required");
const workers = Number(process.env.FLOOR_WORKERS ?? 1);

if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  let listening = 0;
  cluster.on("listening", (_w, address) => {
    if (++listening === workers) process.stdout.write(`${JSON.stringify({ listening: address.port })}\n`);
  });
  process.on("SIGTERM", () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGTERM");
    process.exit(0);
  });
} else {
  const pool = new Pool(upstream, { connections: 1024, pipelining: 1, keepAliveTimeout: 30_000 });
  const server = createServer((req, res) => {
    pool.request({ path: req.url!, method: req.method as "POST", headers: req.headers, body: req }).then(
      (up) => {
        // Framing is the server's own business on each side: the upstream's chunking is not ours to repeat.
        const h = up.headers;
        delete h["transfer-encoding"];
        delete h["connection"];
        delete h["keep-alive"];
        res.writeHead(up.statusCode, h);
        up.body.pipe(res);
      },
      () => {
        res.writeHead(502);
        res.end();
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    if (cluster.isWorker) return;
    const { port } = server.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ listening: port })}\n`);
  });
  process.on("SIGTERM", () => process.exit(0));
}
