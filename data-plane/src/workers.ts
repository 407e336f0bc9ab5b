import cluster, { type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "./logger.ts";

// The data plane's production entry: one replica per core on one port. The primary only forks and watches;
// each worker is a whole replica (main.ts) that shares nothing with the others but Redis, exactly as
// replicas on separate machines do, so every guarantee stated per replica (local admission's bound, usage
// retention, spool) holds per worker. Connections are spread by the primary (round robin).
//
//   MODELGATE_WORKERS   number of workers; default the machine's cores (availableParallelism); 1 runs the
//                       replica in this process with no primary at all.

export function workerCount(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.MODELGATE_WORKERS;
  if (raw === undefined || raw === "" || raw === "auto") return availableParallelism();
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new Error(`MODELGATE_WORKERS must be an integer from 1 to 1024 or "auto", not ${JSON.stringify(raw)}`);
  return n;
}

const replicaEntry = join(
  fileURLToPath(new URL(".", import.meta.url)),
  `main${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`,
);

function supervise(count: number): void {
  const logger = createLogger("modelgate-data-plane-primary");
  let stopping = false;
  let exitCode = 0;
  /** live workers, and whether each has listened yet */
  const live = new Map<Worker, boolean>();
  const fork = (index: number) => {
    // The index names the worker's own spool folder (main.ts): two processes appending to one spool would
    // interleave their records.
    const w = cluster.fork({ MODELGATE_WORKER_INDEX: String(index) });
    live.set(w, false);
    w.once("listening", () => live.set(w, true));
    w.on("exit", (code, signal) => {
      const listened = live.get(w);
      live.delete(w);
      if (stopping) {
        if (live.size === 0) process.exit(exitCode);
        return;
      }
      logger.error({ worker: index, code, signal }, "data-plane worker exited");
      if (!listened) {
        // It died before serving (bad configuration, a port it cannot bind …): a replacement would die
        // the same way, so stop rather than loop.
        logger.error({ worker: index }, "a worker died before it listened: stopping");
        exitCode = 1;
        stop();
        return;
      }
      fork(index);
    });
  };
  cluster.setupPrimary({ exec: replicaEntry, execArgv: process.execArgv });
  for (let i = 0; i < count; i++) fork(i);
  logger.info({ workers: count }, "data plane primary: workers forked");
  function stop() {
    if (stopping) return;
    stopping = true;
    // Each worker drains its own connections (MODELGATE_DRAIN_MS) and flushes its usage before exiting.
    for (const w of live.keys()) w.process.kill("SIGTERM");
    if (live.size === 0) process.exit(exitCode);
  }
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

const count = workerCount();
if (count > 1 && cluster.isPrimary) supervise(count);
else await import(replicaEntry);
