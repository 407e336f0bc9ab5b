import { Worker } from "node:worker_threads";
import type { RedisConnection } from "../redis/connect.ts";
import { fromLoadWorkerSchema, type LoadWorkerData, type ToLoadWorker } from "./load-protocol.ts";
import { PolicyTable, type ShardKind } from "./table.ts";

// The main thread's side of the policy load worker (load-worker.ts says why a load runs there): starts the
// worker for a load and keeps it while loads follow each other, sends it loads and cancellations, and hands
// each shard it posts back as PolicyTables over the transferred arrays. A worker idle for `idleMs` is ended:
// its heap (the load's garbage, ~90 MB of the replica's RSS after a 100k-key load) goes with it, and full
// loads are rare (start, a new epoch, a gap), so the next one pays a worker start (tens of ms) instead. A
// worker that crashes or exits fails the load in progress (the feed reports it and loads again at its next
// pass, on a new worker).

export type LoadRequest = Omit<Extract<ToLoadWorker, { type: "load" }>, "type" | "id">;
/** A shard the worker posted: complete (swap it in) or what was read of it when the load stopped short. */
export type ShardHandler = (
  kind: ShardKind,
  shard: number,
  table: PolicyTable,
  money: PolicyTable,
  complete: boolean,
) => void;

interface Pending {
  onShard: ShardHandler;
  resolve(): void;
  reject(err: Error): void;
}

/**
 * The worker's entry beside this file: compiled JavaScript in production (dist/), TypeScript in development and
 * tests (tsx, vitest). Node 20 runs no TypeScript by itself, and a worker does not inherit the loader hooks
 * `--import tsx` registered on the main thread, so from source the worker registers tsx's hooks first.
 */
function startWorker(data: LoadWorkerData): Worker {
  const fromSource = import.meta.url.endsWith(".ts");
  const entry = new URL(`./load-worker.${fromSource ? "ts" : "js"}`, import.meta.url);
  if (!fromSource) return new Worker(entry, { workerData: data });
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(code, { eval: true, workerData: data });
}

export class PolicyLoadWorker {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private stopped = false;
  private idle: NodeJS.Timeout | null = null;

  constructor(
    private readonly connection: RedisConnection,
    private readonly idleMs = 1_000,
    /** the worker thread's nice value (load-worker.ts lowerPriority) */
    private readonly nice = 0,
  ) {}

  /** The worker thread while one runs (tests). */
  get thread(): Worker | null {
    return this.worker;
  }

  /**
   * Runs one load on the worker, handing each shard to `onShard` as it arrives. Resolves when the load ended
   * (read in full, or cancelled through `signal`); rejects when Redis failed or the worker died.
   */
  load(req: LoadRequest, onShard: ShardHandler, signal: AbortSignal): Promise<void> {
    if (this.stopped || signal.aborted) return Promise.resolve();
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const w = this.start();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      const cancel = () => w.postMessage({ type: "cancel", id } satisfies ToLoadWorker);
      signal.addEventListener("abort", cancel, { once: true });
      const settle = () => {
        signal.removeEventListener("abort", cancel);
        this.pending.delete(id);
        // An idle worker never holds the process open (a replica that forgot stop() still exits), and ends
        // after a while with nothing to do.
        if (this.pending.size === 0 && this.worker) {
          this.worker.unref();
          this.retireLater(this.worker);
        }
      };
      this.pending.set(id, {
        onShard,
        resolve: () => {
          settle();
          resolve();
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      w.ref();
      w.postMessage({ type: "load", id, ...req } satisfies ToLoadWorker);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker({
      connection: { ...this.connection, options: { ...this.connection.options } },
      nice: this.nice,
    });
    this.worker = w;
    w.unref();
    w.on("message", (raw: unknown) => {
      const parsed = fromLoadWorkerSchema.safeParse(raw);
      if (!parsed.success) {
        this.fail(w, new Error(`policy load worker: a message of an unknown shape (${parsed.error.message})`));
        void w.terminate();
        return;
      }
      const m = parsed.data;
      const p = this.pending.get(m.id);
      if (p === undefined) return; // a load given up: its late shards are of no use
      if (m.type === "shard") {
        p.onShard(m.kind, m.shard, PolicyTable.fromParts(m.table), PolicyTable.fromParts(m.money), m.complete);
        return;
      }
      if (m.error === undefined) p.resolve();
      else p.reject(new Error(`policy load worker: ${m.error}`));
    });
    w.on("error", (err) => this.fail(w, err instanceof Error ? err : new Error(String(err))));
    w.on("exit", (code) => this.fail(w, new Error(`policy load worker exited (code ${code})`)));
    return w;
  }

  private retireLater(w: Worker): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      this.idle = null;
      if (this.worker !== w || this.pending.size > 0) return;
      this.worker = null; // first: its exit is then not a failure (see fail)
      void w.terminate();
    }, this.idleMs);
    this.idle.unref();
  }

  /** The worker died: every load it ran fails (a later load starts a new worker). */
  private fail(w: Worker, err: Error): void {
    if (this.worker !== w) return;
    this.worker = null;
    for (const p of [...this.pending.values()]) p.reject(err);
  }

  /** Ends the worker (the replica stops): a load in progress ends as cancelled. */
  async terminate(): Promise<void> {
    this.stopped = true;
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const w = this.worker;
    this.worker = null;
    for (const p of [...this.pending.values()]) p.resolve();
    await w?.terminate();
  }
}
