import { appendFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import { Pool } from "undici";
import type {
  ClosedLoopResult,
  HoldResult,
  OpenLoopResult,
  Percentiles,
  Request,
  SequentialResult,
  StreamResult,
  WorkerCommand,
  WorkerReply,
} from "./protocol.ts";

// The load generator, in its own process (spawned by run.ts with an IPC channel) so it never shares an event
// loop with the harness, the mock or a proxy. One command at a time; each answer is one IPC message.

export function percentiles(values: number[]): Percentiles {
  const s = Float64Array.from(values).sort(); // Infinity (unfinished) sorts last
  const at = (q: number) =>
    s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  let sum = 0;
  for (const v of s) if (Number.isFinite(v)) sum += v;
  return {
    count: s.length,
    mean: s.length ? sum / s.length : NaN,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    p999: at(0.999),
    max: s.length ? s[s.length - 1]! : NaN,
  };
}

const poolFor = (url: string, connections: number) =>
  new Pool(new URL(url).origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });

/** Closed loop with autocannon: `connections` clients, each sending its next request when the last answered. */
async function closedLoop(r: Request, connections: number, durationSec: number): Promise<ClosedLoopResult> {
  const result = await autocannon({
    url: r.url,
    method: "POST",
    headers: r.headers,
    body: r.body,
    connections,
    pipelining: 1,
    duration: durationSec,
    timeout: 10,
  });
  const elapsed = (new Date(result.finish).getTime() - new Date(result.start).getTime()) / 1000;
  const ok = result["2xx"];
  return {
    requests: result.requests.total,
    ok,
    rps: ok / elapsed,
    elapsedSec: elapsed,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
  };
}

/** c=1 with sub-millisecond timing (autocannon reports whole milliseconds): one request at a time on one connection. */
async function sequential(r: Request, durationSec: number): Promise<SequentialResult> {
  const pool = poolFor(r.url, 1);
  const path = new URL(r.url).pathname;
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const start = performance.now();
  const until = start + durationSec * 1000;
  while (performance.now() < until) {
    const t0 = performance.now();
    try {
      const res = await pool.request({ path, method: "POST", headers: r.headers, body: r.body });
      await res.body.dump({ limit: Infinity });
      if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(performance.now() - t0);
      else non2xx++;
    } catch {
      errors++;
    }
  }
  const elapsed = (performance.now() - start) / 1000;
  await pool.close();
  return {
    requests: latencies.length + non2xx + errors,
    rps: latencies.length / elapsed,
    non2xx,
    errors,
    latencyMs: percentiles(latencies),
  };
}

/**
 * Open loop: requests leave on a fixed schedule (`rate` per second) whatever the answers do, each timed with
 * performance.now() from the moment it is handed to undici to the last byte of its body.
 */
async function openLoop(
  r: Request,
  rate: number,
  durationSec: number,
  connections: number,
  graceMs = 2_000,
): Promise<OpenLoopResult> {
  const pool = poolFor(r.url, connections);
  const path = new URL(r.url).pathname;
  const total = Math.round(rate * durationSec);
  const interval = 1000 / rate;
  const latencies: number[] = [];
  const late: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let finished = 0;
  let lastSent = 0;
  let unfinished = 0;
  const abort = new AbortController();
  // BENCH_OPEN_TRACE=file: each request's send time (ms since the start) and latency, to see when slow ones happen
  const trace: string[] | null = process.env.BENCH_OPEN_TRACE ? [] : null;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    const fire = (due: number) => {
      const t0 = performance.now();
      lastSent = t0;
      late.push(t0 - due);
      pool
        .request({ path, method: "POST", headers: r.headers, body: r.body, signal: abort.signal })
        .then(async (res) => {
          await res.body.dump({ limit: Infinity });
          const ms = performance.now() - t0;
          if (trace) trace.push(`${(t0 - start).toFixed(3)} ${ms.toFixed(3)}`);
          if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(ms);
          else non2xx++;
        })
        .catch(() => {
          // still waiting when the run ended: slower than any percentile can show, not a failure
          if (abort.signal.aborted) {
            unfinished++;
            latencies.push(Infinity);
          } else errors++;
        })
        .finally(() => {
          if (++finished === total) resolve();
        });
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) fire(start + sent++ * interval);
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
      else setTimeout(() => abort.abort(), graceMs).unref();
    };
    tick();
  });
  await pool.close();
  if (trace) appendFileSync(process.env.BENCH_OPEN_TRACE!, `# ${r.url}\n${trace.join("\n")}\n`);
  return {
    sent: total,
    unfinished,
    achievedRate: total > 1 ? ((total - 1) * 1000) / (lastSent - start) : NaN,
    non2xx,
    errors,
    latencyMs: percentiles(latencies),
    schedulerLateMs: percentiles(late),
  };
}

interface StreamTiming {
  ttfb: number;
  total: number;
  ok: boolean;
}

async function oneStream(pool: Pool, path: string, r: Request): Promise<StreamTiming> {
  const t0 = performance.now();
  let ttfb = NaN;
  let tail = "";
  try {
    const res = await pool.request({ path, method: "POST", headers: r.headers, body: r.body });
    for await (const c of res.body as AsyncIterable<Buffer>) {
      if (Number.isNaN(ttfb)) ttfb = performance.now() - t0;
      tail = (tail + c.toString("latin1")).slice(-64);
    }
    const total = performance.now() - t0;
    return { ttfb, total, ok: res.statusCode === 200 && tail.includes("[DONE]") };
  } catch {
    return { ttfb, total: performance.now() - t0, ok: false };
  }
}

/** Streams timed one after another (TTFB = first body byte), then `concurrent` at a time. */
async function streams(r: Request, sequential: number, concurrent: number, perClient: number): Promise<StreamResult> {
  const path = new URL(r.url).pathname;
  const seqPool = poolFor(r.url, 1);
  for (let i = 0; i < 5; i++) await oneStream(seqPool, path, r); // warm-up: connection, JIT
  const seq: StreamTiming[] = [];
  for (let i = 0; i < sequential; i++) seq.push(await oneStream(seqPool, path, r));
  await seqPool.close();
  const conPool = poolFor(r.url, concurrent);
  const con: StreamTiming[] = [];
  const c0 = performance.now();
  const trace: string[] = [];
  await Promise.all(
    Array.from({ length: concurrent }, async (_, c) => {
      for (let i = 0; i < perClient; i++) {
        const at = performance.now() - c0;
        const s = await oneStream(conPool, path, r);
        trace.push(`${c}\t${i}\t${at.toFixed(2)}\t${s.ttfb.toFixed(2)}\t${s.total.toFixed(2)}`);
        con.push(s);
      }
    }),
  );
  if (process.env.BENCH_STREAM_TRACE)
    appendFileSync(process.env.BENCH_STREAM_TRACE, `# ${r.url}\n${trace.join("\n")}\n`);
  await conPool.close();
  const good = (xs: StreamTiming[]) => xs.filter((x) => x.ok);
  return {
    failed: seq.length + con.length - good(seq).length - good(con).length,
    sequential: {
      ttfbMs: percentiles(good(seq).map((x) => x.ttfb)),
      totalMs: percentiles(good(seq).map((x) => x.total)),
    },
    concurrent: {
      clients: concurrent,
      ttfbMs: percentiles(good(con).map((x) => x.ttfb)),
      totalMs: percentiles(good(con).map((x) => x.total)),
    },
  };
}

let held: { pool: Pool; abort: AbortController; settled: Promise<unknown> } | null = null;

/** Opens `count` streams at once and keeps them open; answers when all have a first byte or after `waitMs`. */
async function hold(r: Request, count: number, waitMs: number): Promise<HoldResult> {
  const pool = poolFor(r.url, count);
  const abort = new AbortController();
  const path = new URL(r.url).pathname;
  let firstBytes = 0;
  let statusNot200 = 0;
  let errors = 0;
  let resolveAll: () => void = () => undefined;
  const all = new Promise<void>((res) => (resolveAll = res));
  const t0 = performance.now();
  const settled = Promise.allSettled(
    Array.from({ length: count }, async () => {
      try {
        const res = await pool.request({
          path,
          method: "POST",
          headers: r.headers,
          body: r.body,
          signal: abort.signal,
          headersTimeout: 0,
          bodyTimeout: 0,
        });
        if (res.statusCode !== 200) statusNot200++;
        let first = true;
        for await (const _c of res.body as AsyncIterable<Buffer>) {
          if (first && ++firstBytes === count) resolveAll();
          first = false;
        }
      } catch {
        if (!abort.signal.aborted) errors++;
      }
    }),
  );
  held = { pool, abort, settled };
  await Promise.race([all, new Promise((res) => setTimeout(res, waitMs))]);
  return { requested: count, withFirstByte: firstBytes, statusNot200, errors, waitedMs: performance.now() - t0 };
}

async function release(): Promise<void> {
  if (!held) return;
  held.abort.abort();
  await held.settled;
  await held.pool.destroy();
  held = null;
}

async function run(cmd: WorkerCommand): Promise<WorkerReply> {
  switch (cmd.kind) {
    case "closed":
      return { kind: "closed", result: await closedLoop(cmd.request, cmd.connections, cmd.durationSec) };
    case "open":
      return { kind: "open", result: await openLoop(cmd.request, cmd.rate, cmd.durationSec, cmd.connections) };
    case "sequential":
      return { kind: "sequential", result: await sequential(cmd.request, cmd.durationSec) };
    case "streams":
      return { kind: "streams", result: await streams(cmd.request, cmd.sequential, cmd.concurrent, cmd.perClient) };
    case "hold":
      return { kind: "hold", result: await hold(cmd.request, cmd.count, cmd.waitMs) };
    case "release":
      await release();
      return { kind: "release" };
  }
}

if (process.send) {
  process.on("message", (cmd: WorkerCommand) => {
    run(cmd).then(
      (reply) => process.send!(reply),
      (err: unknown) =>
        process.send!({
          kind: "error",
          message: err instanceof Error ? (err.stack ?? err.message) : String(err),
        } satisfies WorkerReply),
    );
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ kind: "ready" } satisfies WorkerReply);
}
