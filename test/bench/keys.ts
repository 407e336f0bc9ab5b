import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { redisNames } from "../../data-plane/src/contract/redis-names.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { freePort, repoRoot } from "../helpers/processes.ts";
import { type BenchProc, cpuMs, memoryMb, spawnNode, stopAll, waitForUrl } from "./procs.ts";

// `npm run bench:keys [-- 10000 100000 1000000]` (issue 13): policy at scale. For each size N: N keys over
// N/10 accounts inserted in bulk (INSERT … SELECT over generate_series, 100,000 rows a statement), then one
// control plane (publishes the policy feed in full at start) and one data plane (loads it), 300 req/s of chat
// completions against the mock upstream throughout (after 5 s with no traffic, in which the control plane's
// CPU beyond settlement is measured), and four phases of 20 s each:
//   steady   no admin changes: baseline latency, event-loop delay, control-plane CPU (settlement only);
//   changes  a key created and another revoked every 2 s (SQL + the CLI's notification), each timed until the
//            replica accepts / refuses it;
//   bulk     min(BENCH_BULK = 50,000, N/2) keys inserted in one statement (an import), published as changes, and a
//            key revoked right after its commit, timed until the replica refuses it;
//   reload   the feed's head moved past what the stream holds (a gap), so the replica loads everything in full
//            under load; BENCH_RELOADS (3) times or more, until the reloads span 6 s, the calls overlapping any of
//            them pooled.
// Writes bench/results/keys-latest.md.
//
//   BENCH_PIN=1  a diagnostic: the data plane alone on CPU 1, the control plane, load generator and mock on
//                CPU 0 (taskset; Redis and Postgres stay where the system runs them), to tell the replica's own
//                event-loop stalls from time it waits for a core the other processes hold
//   BENCH_DP_NODE_ARGS="--flag …"  Node options for the measured replica (diagnostics: --trace-gc-nvp, --inspect=…)
//   BENCH_KEEP_LOGS=1  keep the work directory with every process's log (its path is printed)

const RATE = Number(process.env.BENCH_RATE ?? 300);
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 20_000);
/** keys inserted at once in the bulk phase (at most half the key count) */
const BULK = Number(process.env.BENCH_BULK ?? 50_000);
/** how long the control plane's CPU is measured with no traffic (before the load starts) */
const IDLE_MS = 5_000;
/** full reloads in the reload phase: at least RELOADS, more (up to RELOADS_MAX) until they span RELOAD_POOL_MS */
const RELOADS = Number(process.env.BENCH_RELOADS ?? 3);
const RELOADS_MAX = 10;
const RELOAD_POOL_MS = 6_000;
/** between two reloads: the load worker ends after 1 s idle, so each reload starts one, as a real one would */
const RELOAD_GAP_MS = 2_000;
const MODEL = "bench-chat-2025-01-01";
const UPSTREAM_KEY = "sk-bench-upstream";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
if (sizes.length === 0) sizes.push(10_000, 100_000, 1_000_000);

const PIN = process.env.BENCH_PIN === "1";
/** Pins every thread of a process to one CPU (BENCH_PIN). */
const pin = (proc: BenchProc, cpu: number) => {
  if (PIN) execFileSync("taskset", ["-a", "-p", "-c", String(cpu), String(proc.pid)], { stdio: "ignore" });
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (values: number[], q: number) => {
  const s = Float64Array.from(values).sort();
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
};
const ms = (v: number) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(2)) : "∞");

interface Metrics {
  loopP99: number;
  loopMax: number;
}
// /metrics (and, with a token set, /readyz) need the bearer token (issue 25)
const METRICS_TOKEN = randomBytes(16).toString("hex");
const OPS_AUTH = { authorization: `Bearer ${METRICS_TOKEN}` };
async function scrape(origin: string): Promise<Metrics> {
  const text = await (await fetch(`${origin}/metrics`, { headers: OPS_AUTH })).text();
  const q = (name: string) =>
    Number(
      new RegExp(`modelgate_event_loop_delay_seconds\\{quantile="${name}"\\} ([0-9.e+-]+)`).exec(text)?.[1] ?? NaN,
    ) * 1000;
  return { loopP99: q("p99"), loopMax: q("max") };
}
interface Readyz {
  policy: { keys: number; accounts: number; loading: boolean; fullLoads: number; lastFullLoadMs: number | null };
}
const readyz = async (origin: string) =>
  (await (await fetch(`${origin}/readyz`, { headers: OPS_AUTH })).json()) as Readyz;

interface Row {
  n: number;
  insertSec: number;
  cpFullSec: number;
  cpPeakMb: number;
  dpStartLoadMs: number;
  redisMb: number;
  steady: { p50: number; p99: number; loopP99: number; loopMax: number; failed: number; sent: number };
  changes: {
    p99: number;
    loopP99: number;
    loopMax: number;
    failed: number;
    revokeMs: number[];
    createMs: number[];
    revokeAppendMs: number[];
  };
  bulk: {
    keys: number;
    /** commit → the replica holds every key of the bulk */
    applyMs: number;
    /** a key revoked right after the bulk's commit: until the replica refuses it */
    revokeMs: number;
    /** full loads the replica made meanwhile (a bulk travels as changes: 0) */
    fullLoads: number;
    p99: number;
    loopP99: number;
    loopMax: number;
    failed: number;
  };
  reload: {
    /** full reloads made; the figures below are per reload (means) or over the calls of all of them (pooled) */
    reloads: number;
    /** p99 of each window of the steady phase as long as the reload (see where it is measured) */
    steadyWindowP99: number[];
    loadMs: number;
    p99: number;
    max: number;
    loopP99: number;
    loopMax: number;
    failed: number;
    sent: number;
    windowMs: number;
    dpCpuMs: number;
  };
  /** the machine's 1-minute load average at the end of each phase (2 cores; other work shares them) */
  load: number[];
  cpCpuSteadyPct: number;
  /** the control plane's CPU with no traffic and no admin changes (timers, heartbeat, polling): beyond settlement */
  cpCpuIdlePct: number;
  dpCpuSteadyPct: number;
  dpRssMb: number;
  dpBaseRssMb: number;
  redisUsecPerAppend: number;
  redisMaxUsec: number;
}

function buildDataPlane(): string {
  execFileSync("npm", ["run", "build", "-w", "data-plane", "--silent"], { cwd: repoRoot, stdio: "inherit" });
  return "data-plane/dist/main.js";
}

async function window(load: BenchProc, from: number, to: number): Promise<{ latencies: number[]; failed: number }> {
  return new Promise((resolve) => {
    load.child.once("message", (m) => resolve(m as { latencies: number[]; failed: number }));
    load.child.send({ report: [from, to] });
  });
}

async function runSize(n: number, dpEntry: string): Promise<Row> {
  const accounts = Math.max(1, Math.floor(n / 10));
  const db = await freshDatabase("keys");
  const prefix = `mgbench:${randomBytes(4).toString("hex")}:`;
  const names = redisNames(prefix);
  const redis = new Redis(REDIS_URL);
  const work = mkdtempSync(join(tmpdir(), "mg-keys-"));
  const procs: BenchProc[] = [];
  let ok = false;
  try {
    // Bulk insert: accounts, then keys (hash of sk-mg-bench-<i>), each key on account (i mod accounts) + 1.
    const t0 = performance.now();
    await db.db.sql.transaction((tx) =>
      tx.query(
        `INSERT INTO accounts (id, name, balance_micro, updated_at) SELECT gen_random_uuid(), 'acct-' || i, 1000000000000000, now() FROM generate_series(1, $1::int) i`,
        [accounts],
      ),
    );
    for (let from = 1; from <= n; from += 100_000) {
      const to = Math.min(n, from + 99_999);
      await db.db.sql.transaction((tx) =>
        tx.query(
          `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at)
           SELECT gen_random_uuid(), a.id, 'key-' || i, encode(sha256(convert_to('sk-mg-bench-' || i, 'UTF8')), 'hex'), 'sk-mg-bench', '{}', '{}', now()
           FROM generate_series($1::int, $2::int) i JOIN accounts a ON a.name = 'acct-' || ((i % $3::int) + 1)`,
          [from, to, accounts],
        ),
      );
    }
    const insertSec = (performance.now() - t0) / 1000;
    console.log(`[${n}] inserted ${n} keys over ${accounts} accounts in ${insertSec.toFixed(1)} s`);

    const mockPort = await freePort();
    const mock = spawnNode("mock-upstream", "test/bench/mock-upstream.ts", [], {
      env: { PORT: String(mockPort), MOCK_API_KEY: UPSTREAM_KEY },
    });
    procs.push(mock);
    pin(mock, 0);
    await waitForUrl(`http://127.0.0.1:${mockPort}/stats`, mock);
    const config = join(work, "gateway.json");
    writeFileSync(
      config,
      JSON.stringify({
        upstreams: [
          {
            name: "bench-mock",
            protocol: "openai",
            baseUrl: `http://127.0.0.1:${mockPort}/v1`,
            apiKey: "${BENCH_UPSTREAM_KEY}",
          },
        ],
        models: [
          {
            id: MODEL,
            reasoning: false,
            price: { input: 0.15, output: 0.6 },
            routes: [{ upstream: "bench-mock", model: MODEL, weight: 1 }],
          },
        ],
      }),
    );
    const env: NodeJS.ProcessEnv = {
      DATABASE_URL: db.url,
      REDIS_URL,
      MODELGATE_REDIS_PREFIX: prefix,
      MODELGATE_MASTER_KEY: randomBytes(32).toString("hex"),
      MODELGATE_DATA_DIR: work,
      GATEWAY_CONFIG: config,
      BENCH_UPSTREAM_KEY: UPSTREAM_KEY,
      LOG_LEVEL: "warn",
      MODELGATE_METRICS_TOKEN: METRICS_TOKEN,
    };

    // A replica with nothing to load: its RSS is the baseline the keys are measured against.
    const basePort = await freePort();
    const base = spawnNode("data-plane-empty", dpEntry, [], {
      nodeArgs: [],
      env: {
        ...env,
        MODELGATE_REDIS_PREFIX: `${prefix}empty:`,
        PORT: String(basePort),
        DATABASE_URL: "",
        MODELGATE_SPOOL_DIR: join(work, "spool-empty"),
      },
      logFile: join(work, "dp-empty.log"),
    });
    await waitForUrl(`http://127.0.0.1:${basePort}/healthz`, base);
    await sleep(2_000);
    const dpBaseRssMb = memoryMb(base.pid).rss;
    await base.stop();

    const redisBefore = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
    const cpPort = await freePort();
    const tCp = performance.now();
    const cp = spawnNode("control-plane", "control-plane/src/main/control-plane.ts", [], {
      env: { ...env, PORT: String(cpPort), NODE_OPTIONS: "--max-old-space-size=4096" },
      logFile: join(work, "cp.log"),
    });
    procs.push(cp);
    pin(cp, 0);
    while (!(await redis.hget(names.policyMeta, "epoch"))) {
      if (cp.child.exitCode !== null) throw new Error(`control plane exited; see ${work}/cp.log`);
      await sleep(50);
    }
    const cpFullSec = (performance.now() - tCp) / 1000;
    await waitForUrl(`http://127.0.0.1:${cpPort}/healthz`, cp, 600_000);
    const redisMb = (Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]) - redisBefore) / 1048576;
    console.log(
      `[${n}] control plane published in full after ${cpFullSec.toFixed(1)} s (incl. start); Redis +${redisMb.toFixed(0)} MB`,
    );

    const dpPort = await freePort();
    const origin = `http://127.0.0.1:${dpPort}`;
    const dp = spawnNode("data-plane", dpEntry, [], {
      // BENCH_DP_NODE_ARGS: V8 flags for the measured replica (e.g. --trace-gc-nvp, --heap-prof), a diagnostic.
      nodeArgs: (process.env.BENCH_DP_NODE_ARGS ?? "").split(" ").filter(Boolean),
      env: { ...env, PORT: String(dpPort), DATABASE_URL: "", MODELGATE_SPOOL_DIR: join(work, "spool") },
      logFile: join(work, "dp.log"),
    });
    procs.push(dp);
    pin(dp, 1);
    await waitForUrl(`${origin}/readyz`, dp, 600_000, { headers: OPS_AUTH });
    const dpStartLoadMs = (await readyz(origin)).policy.lastFullLoadMs ?? NaN;
    console.log(`[${n}] data plane loaded ${(await readyz(origin)).policy.keys} keys in ${dpStartLoadMs} ms`);

    // idle: no traffic, no admin changes: what the control plane costs beyond settlement
    await sleep(2_000);
    const cpIdle0 = cpuMs(cp.pid);
    await sleep(IDLE_MS);
    const cpCpuIdlePct = ((cpuMs(cp.pid) - cpIdle0) / IDLE_MS) * 100;

    const load = spawnNode("load", "test/bench/keys-load.ts", [], {
      ipc: true,
      env: { TARGET: origin, RATE: String(RATE), KEY_TOTAL: String(n), MODEL },
    });
    procs.push(load);
    pin(load, 0);
    // Warm-up: JIT, connections, and every bench key used once (the load cycles through min(n, 10,000) keys),
    // so the steady phase, like the later ones, finds each key's policy parsed; with 5 s of warm-up two thirds of
    // the steady phase's calls were a key's first and parsed its policy, which the reload phase's did not.
    await sleep(Math.max(5_000, (Math.min(n, 10_000) / RATE) * 1000 + 2_000));

    // steady
    await scrape(origin);
    await redis.config("RESETSTAT");
    const cpCpu0 = cpuMs(cp.pid);
    const dpCpu0 = cpuMs(dp.pid);
    const s0 = Date.now();
    await sleep(PHASE_MS);
    const s1 = Date.now();
    const machineLoad = [loadavg()[0]!];
    const cpCpuSteadyPct = ((cpuMs(cp.pid) - cpCpu0) / PHASE_MS) * 100;
    const dpCpuSteadyPct = ((cpuMs(dp.pid) - dpCpu0) / PHASE_MS) * 100;
    const steadyLoop = await scrape(origin);
    await sleep(1_000);
    const steadyLat = await window(load, s0, s1);

    // changes: a key created and one revoked every 2 s
    const [acct] = await db.db.sql.transaction((tx) =>
      tx.query<{ id: string }>(`SELECT id::text FROM accounts WHERE name = 'acct-1'`),
    );
    const notify = () => redis.publish(names.changedChannel, "bench");
    const probe = async (key: string) => {
      const res = await fetch(`${origin}/v1/models/no-such-model-2000-01-01`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return ((await res.json()) as { error?: { code?: string } }).error?.code ?? "ok";
    };
    const until = async (key: string, ok: (code: string) => boolean) => {
      const t = performance.now();
      while (!ok(await probe(key))) {
        if (performance.now() - t > 30_000) return Infinity;
        await sleep(2);
      }
      return performance.now() - t;
    };
    const revokeMs: number[] = [];
    // how much of a revocation's delay is the control plane's (commit → the change's stream entry, whose id
    // carries Redis's clock in ms) and how much the replica's (the rest)
    const revokeAppendMs: number[] = [];
    const appendedAt = async (hash: string): Promise<number> => {
      const epoch = (await redis.hget(names.policyMeta, "epoch"))!;
      const entries = (await redis.xrevrange(names.policyStream(epoch), "+", "-", "COUNT", 5_000)) as [
        string,
        string[],
      ][];
      for (const [id, f] of entries)
        if (f[f.indexOf("i") + 1] === hash && f[f.indexOf("d") + 1]!.includes('"revoked"'))
          return Number(id.split("-")[0]);
      return NaN;
    };
    const createMs: number[] = [];
    const created: string[] = [];
    await redis.config("RESETSTAT");
    const c0 = Date.now();
    for (let i = 0; Date.now() - c0 < PHASE_MS; i++) {
      const round = Date.now();
      const key = `sk-mg-new-${randomBytes(8).toString("hex")}`;
      await db.db.sql.transaction((tx) =>
        tx.query(
          `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at)
           VALUES (gen_random_uuid(), $1::uuid, $2, encode(sha256(convert_to($2, 'UTF8')), 'hex'), 'sk-mg-new', '{}', '{}', now())`,
          [acct!.id, key],
        ),
      );
      await notify();
      createMs.push(await until(key, (c) => c !== "invalid_api_key"));
      created.push(key);
      if (created.length > 1) {
        const victim = created.shift()!;
        const [{ hash }] = (await db.db.sql.transaction((tx) =>
          tx.query<{ hash: string }>(
            `UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex') RETURNING key_hash AS hash`,
            [victim],
          ),
        )) as [{ hash: string }];
        const committed = Date.now();
        await notify();
        revokeMs.push(await until(victim, (c) => c === "key_revoked"));
        revokeAppendMs.push((await appendedAt(hash)) - committed);
      }
      await sleep(Math.max(0, 2_000 - (Date.now() - round)));
    }
    const c1 = Date.now();
    machineLoad.push(loadavg()[0]!);
    const changesLoop = await scrape(origin);
    // Redis time per publication, in 5 s of its own after the timed window (settlement publishes the accounts
    // and keys it touched several times a second): every command is logged with its duration (SLOWLOG at a
    // 0 µs threshold, which costs Redis a little, hence apart), so the feed's scripts can be told from the rate
    // limiter's (both EVALSHA) by the keys they name.
    const slowlogWas = (await redis.config("GET", "slowlog-*")) as string[];
    await redis.config("SET", "slowlog-log-slower-than", "0");
    await redis.config("SET", "slowlog-max-len", "1000000");
    await redis.call("SLOWLOG", "RESET");
    await sleep(5_000);
    const logged = (await redis.call("SLOWLOG", "GET", "-1")) as [number, number, number, string[]][];
    for (let i = 0; i + 1 < slowlogWas.length; i += 2) await redis.config("SET", slowlogWas[i]!, slowlogWas[i + 1]!);
    // The feed's commands: the append script on the head ({ctl}) and the per-shard scripts ({policy:…}).
    let appends = 0;
    let feedUsec = 0;
    let feedMaxUsec = 0;
    for (const [, , usec, args] of logged) {
      if (!/^eval/i.test(args[0] ?? "")) continue;
      const keys = args.slice(3, 3 + Number(args[2]));
      if (keys.some((k) => k === names.policyMeta)) appends++;
      else if (!keys.some((k) => k.includes("{policy:"))) continue;
      feedUsec += usec;
      feedMaxUsec = Math.max(feedMaxUsec, usec);
    }
    const redisUsecPerAppend = appends > 0 ? feedUsec / appends : NaN;
    const changesLat = await window(load, c1 - PHASE_MS, c1);

    // bulk: BULK keys inserted in one statement (an import), and a key revoked right after its commit. The bulk
    // travels as changes (pages from one snapshot), so the replica makes no full load, and the revocation is
    // published between the bulk's pages instead of waiting for all of them.
    const bulkKeys = Math.min(BULK, Math.floor(n / 2));
    const bulkBefore = await readyz(origin);
    await scrape(origin);
    const b0 = Date.now();
    await db.db.sql.transaction((tx) =>
      tx.query(
        `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at)
         SELECT gen_random_uuid(), $1::uuid, 'bulk-' || i, encode(sha256(convert_to('sk-mg-bulk-' || i, 'UTF8')), 'hex'), 'sk-mg-bulk', '{}', '{}', now()
         FROM generate_series(1, $2::int) i`,
        [acct!.id, bulkKeys],
      ),
    );
    const bulkCommitted = performance.now();
    await notify();
    const bulkVictim = created.shift()!;
    await db.db.sql.transaction((tx) =>
      tx.query(
        `UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE key_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
        [bulkVictim],
      ),
    );
    await notify();
    const bulkRevokeMs = await until(bulkVictim, (c) => c === "key_revoked");
    let bulkAfter = await readyz(origin);
    while (bulkAfter.policy.keys < bulkBefore.policy.keys + bulkKeys) {
      if (performance.now() - bulkCommitted > 600_000) throw new Error("the replica did not get the bulk");
      await sleep(20);
      bulkAfter = await readyz(origin);
    }
    const bulkApplyMs = performance.now() - bulkCommitted;
    const b1 = Date.now();
    machineLoad.push(loadavg()[0]!);
    const bulkLoop = await scrape(origin);
    await sleep(1_500);
    const bulkLat = await window(load, b0, b1);
    console.log(
      `[${n}] bulk of ${bulkKeys} keys held by the replica after ${bulkApplyMs.toFixed(0)} ms; a key revoked after it refused after ${bulkRevokeMs.toFixed(0)} ms; full loads ${bulkAfter.policy.fullLoads - bulkBefore.policy.fullLoads}`,
    );

    // reload: the head moves past what the stream holds, as after a long disconnect: the replica sees the gap and
    // loads in full. Repeated (RELOADS, and until the reloads cover RELOAD_POOL_MS) with a pause between, and the
    // calls overlapping any of them pooled: one reload of ~1 s holds ~300 calls, whose p99 is its 3 slowest, so a
    // single one moved by several ms from run to run (+3.4, -0.8, +5.5 ms at 100k keys in four quiet runs).
    const reloadWindows: [number, number][] = [];
    const reloadLoops: Metrics[] = [];
    let reloadCpuMs = 0;
    let reloadWallMs = 0;
    let after = await readyz(origin);
    while (
      reloadWindows.length < RELOADS_MAX &&
      (reloadWindows.length < RELOADS || reloadWindows.reduce((t, [a, b]) => t + b - a, 0) < RELOAD_POOL_MS)
    ) {
      const before = after;
      await scrape(origin);
      const r0 = Date.now();
      console.log(`[${n}] full reload ${reloadWindows.length + 1} starts at ${r0}`);
      const dpCpuR0 = cpuMs(dp.pid);
      await redis.hincrby(names.policyMeta, "seq", 5);
      await redis.publish(names.policyChannel, "gap");
      while (after.policy.fullLoads === before.policy.fullLoads || after.policy.loading) {
        await sleep(20);
        after = await readyz(origin);
        if (Date.now() - r0 > 600_000) throw new Error("the replica did not reload in full");
      }
      const r1 = Date.now();
      reloadCpuMs += cpuMs(dp.pid) - dpCpuR0;
      reloadWallMs += after.policy.lastFullLoadMs ?? NaN;
      reloadWindows.push([r0, r1]);
      reloadLoops.push(await scrape(origin));
      await sleep(RELOAD_GAP_MS);
    }
    machineLoad.push(loadavg()[0]!);
    const reloadLat = { latencies: [] as number[], failed: 0 };
    for (const [r0, r1] of reloadWindows) {
      const w = await window(load, r0, r1);
      reloadLat.latencies.push(...w.latencies);
      reloadLat.failed += w.failed;
    }
    const reloads = reloadWindows.length;
    const reloadSpan = reloadWindows.reduce((t, [a, b]) => t + b - a, 0) / reloads;
    // The steady phase cut into windows as long as a reload: a short window's p99 is its few slowest calls,
    // so one of the request path's own periodic major GCs (every few seconds in every phase) can be a short
    // window's p99 though it is under a 20 s phase's. Their p99s say what "no reload" looks like at this length.
    const span = Math.max(250, reloadSpan);
    const steadyWindowP99: number[] = [];
    for (let t = s0; t + span <= s1; t += span) {
      const w = await window(load, t, t + span);
      if (w.latencies.length > 0) steadyWindowP99.push(pct(w.latencies, 0.99));
    }
    const dpRssMb = memoryMb(dp.pid).rss;
    const cpPeakMb = memoryMb(cp.pid).peak;

    load.child.send({ stop: true });
    const row: Row = {
      n,
      insertSec,
      cpFullSec,
      cpPeakMb,
      dpStartLoadMs,
      redisMb,
      steady: {
        p50: pct(steadyLat.latencies, 0.5),
        p99: pct(steadyLat.latencies, 0.99),
        loopP99: steadyLoop.loopP99,
        loopMax: steadyLoop.loopMax,
        failed: steadyLat.failed,
        sent: steadyLat.latencies.length,
      },
      changes: {
        p99: pct(changesLat.latencies, 0.99),
        loopP99: changesLoop.loopP99,
        loopMax: changesLoop.loopMax,
        failed: changesLat.failed,
        revokeMs,
        createMs,
        revokeAppendMs,
      },
      bulk: {
        keys: bulkKeys,
        applyMs: bulkApplyMs,
        revokeMs: bulkRevokeMs,
        fullLoads: bulkAfter.policy.fullLoads - bulkBefore.policy.fullLoads,
        p99: pct(bulkLat.latencies, 0.99),
        loopP99: bulkLoop.loopP99,
        loopMax: bulkLoop.loopMax,
        failed: bulkLat.failed,
      },
      reload: {
        steadyWindowP99,
        reloads,
        loadMs: reloadWallMs / reloads,
        p99: pct(reloadLat.latencies, 0.99),
        max: pct(reloadLat.latencies, 1),
        loopP99: Math.max(...reloadLoops.map((l) => l.loopP99)),
        loopMax: Math.max(...reloadLoops.map((l) => l.loopMax)),
        failed: reloadLat.failed,
        sent: reloadLat.latencies.length,
        windowMs: reloadSpan,
        dpCpuMs: reloadCpuMs / reloads,
      },
      load: machineLoad,
      cpCpuSteadyPct,
      cpCpuIdlePct,
      dpCpuSteadyPct,
      dpRssMb,
      dpBaseRssMb,
      redisUsecPerAppend,
      redisMaxUsec: feedMaxUsec,
    };
    console.log(JSON.stringify(row));
    ok = true;
    return row;
  } finally {
    for (const p of procs.reverse()) await p.stop();
    let cursor = "0";
    do {
      const [c, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = c;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== "0");
    redis.disconnect();
    await db.drop();
    if (ok && !process.env.BENCH_KEEP_LOGS) rmSync(work, { recursive: true, force: true });
    else console.error(`logs kept in ${work}`);
  }
}

function report(rows: Row[]): string {
  const k = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
  const col = (f: (r: Row) => string) => rows.map(f).join(" | ");
  const lines = [
    `# bench:keys (issue 13)`,
    ``,
    `${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}; ${RATE} req/s of chat completions throughout, phases of ${PHASE_MS / 1000} s. One control plane (tsx) and one data plane (compiled), Postgres and Redis on the same machine.${PIN ? " **Pinned (BENCH_PIN=1, a diagnostic):** the data plane alone on CPU 1; control plane, load generator and mock on CPU 0." : ""}`,
    ``,
    `| | ${rows.map((r) => `${k(r.n)} keys`).join(" | ")} |`,
    `|---|${rows.map(() => "---").join("|")}|`,
    `| bulk insert (keys + accounts, triggers included) | ${col((r) => `${r.insertSec.toFixed(1)} s`)} |`,
    `| control plane: first full publication (from process start) / peak RSS | ${col((r) => `${r.cpFullSec.toFixed(1)} s / ${r.cpPeakMb.toFixed(0)} MB`)} |`,
    `| policy in Redis | ${col((r) => `${r.redisMb.toFixed(0)} MB`)} |`,
    `| Redis time per publication (the shards' scripts and the head's, ≤ 100 changes; settlement's) / longest single command | ${col((r) => `${r.redisUsecPerAppend.toFixed(0)} / ${r.redisMaxUsec.toFixed(0)} µs`)} |`,
    `| replica full load at start | ${col((r) => `${(r.dpStartLoadMs / 1000).toFixed(1)} s`)} |`,
    `| revoked key refused after: p50 / p99 (max) | ${col((r) => `${ms(pct(r.changes.revokeMs, 0.5))} / ${ms(pct(r.changes.revokeMs, 0.99))} ms (${r.changes.revokeMs.length})`)} |`,
    `| … of which the control plane (commit → stream entry): p50 / p99 | ${col((r) => `${ms(pct(r.changes.revokeAppendMs, 0.5))} / ${ms(pct(r.changes.revokeAppendMs, 0.99))} ms`)} |`,
    `| created key accepted after: p50 / p99 | ${col((r) => `${ms(pct(r.changes.createMs, 0.5))} / ${ms(pct(r.changes.createMs, 0.99))} ms`)} |`,
    `| call latency steady: p50 / p99 | ${col((r) => `${ms(r.steady.p50)} / ${ms(r.steady.p99)} ms`)} |`,
    `| added p99 while changes land | ${col((r) => `${ms(r.changes.p99 - r.steady.p99)} ms`)} |`,
    `| bulk import as changes: keys / held by the replica after / a key revoked meanwhile refused after / full loads | ${col((r) => `${r.bulk.keys.toLocaleString("en")} / ${(r.bulk.applyMs / 1000).toFixed(1)} s / ${ms(r.bulk.revokeMs)} ms / ${r.bulk.fullLoads}`)} |`,
    `| p99 of calls during the bulk (added p99); event-loop delay p99 / max | ${col((r) => `${ms(r.bulk.p99)} ms (+${ms(r.bulk.p99 - r.steady.p99)}); ${ms(r.bulk.loopP99)} / ${ms(r.bulk.loopMax)} ms`)} |`,
    `| full reload under load (gap), per reload: wall / replica CPU (reloads) | ${col((r) => `${(r.reload.loadMs / 1000).toFixed(1)} s / ${(r.reload.dpCpuMs / 1000).toFixed(1)} s (${r.reload.reloads})`)} |`,
    `| p99 / max of the calls overlapping the reloads, pooled (added p99) | ${col((r) => `${ms(r.reload.p99)} / ${ms(r.reload.max)} ms (+${ms(r.reload.p99 - r.steady.p99)})`)} |`,
    `| … against steady windows as long as the reload: their p99s, median / worst (the reload's p99 minus their median) | ${col(
      (r) => {
        const w = [...r.reload.steadyWindowP99].sort((a, b) => a - b);
        const med = pct(w, 0.5);
        return w.length === 0
          ? "–"
          : `${ms(med)} / ${ms(w[w.length - 1]!)} ms (+${ms(r.reload.p99 - med)}; ${w.length} windows)`;
      },
    )} |`,
    `| event-loop delay p99 / max: steady | ${col((r) => `${ms(r.steady.loopP99)} / ${ms(r.steady.loopMax)} ms`)} |`,
    `| … while changes land | ${col((r) => `${ms(r.changes.loopP99)} / ${ms(r.changes.loopMax)} ms`)} |`,
    `| … during the full reloads (worst of them) | ${col((r) => `${ms(r.reload.loopP99)} / ${ms(r.reload.loopMax)} ms`)} |`,
    `| replica RSS (empty replica) → per key | ${col((r) => `${r.dpRssMb.toFixed(0)} MB (${r.dpBaseRssMb.toFixed(0)}) → ${(((r.dpRssMb - r.dpBaseRssMb) * 1048576) / r.n).toFixed(0)} B`)} |`,
    `| control-plane CPU at ${RATE} req/s, no admin changes (settlement included) / with no traffic | ${col((r) => `${r.cpCpuSteadyPct.toFixed(1)}% / ${r.cpCpuIdlePct.toFixed(2)}% of a core`)} |`,
    `| data-plane CPU at ${RATE} req/s | ${col((r) => `${r.dpCpuSteadyPct.toFixed(1)}% of a core`)} |`,
    `| failed calls (steady / changes / bulk / reload) | ${col((r) => `${r.steady.failed} / ${r.changes.failed} / ${r.bulk.failed} / ${r.reload.failed}`)} |`,
    `| machine load average (steady / changes / bulk / reload; 2 cores) | ${col((r) => r.load.map((l) => l.toFixed(1)).join(" / "))} |`,
  ];
  return lines.join("\n") + "\n";
}

const dpEntry = buildDataPlane();
const rows: Row[] = [];
try {
  for (const n of sizes) {
    rows.push(await runSize(n, dpEntry));
    const md = report(rows);
    mkdirSync(join(repoRoot, "bench/results"), { recursive: true });
    writeFileSync(join(repoRoot, PIN ? "bench/results/keys-pinned.md" : "bench/results/keys-latest.md"), md);
    console.log(md);
  }
} finally {
  await stopAll();
}
