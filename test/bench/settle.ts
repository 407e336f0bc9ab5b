// What settling usage costs Postgres (`npm run bench:settle`): realistic synthetic usage events settled in
// batches through the real settleUsageBatch on one dedicated connection, reporting that backend's CPU per event
// (on-CPU time from /proc/<pid>/schedstat, nanoseconds; utime+stime as a cross-check), wall time, WAL bytes
// per event, the CPU of each statement, and EXPLAIN (ANALYZE, BUFFERS, WAL) of each statement of one more batch.
// The control plane's side too: this Node process's own CPU per event (process.cpuUsage(), which counts its GC
// and libuv threads) for settling, and for reading the events out of usage-stream entries as the Redis
// consumer does (eventsOfEntries: the entry's signature, JSON and schema validation) before each batch settles them. Each batch
// arrives as entries of SETTLE_ENTRY_EVENTS events (25), JSON-encoded like a data plane's turn.
//
// Knobs (environment): SETTLE_EVENTS (50000), SETTLE_BATCH (300), SETTLE_ACCOUNTS (4), SETTLE_PREFILL (usage rows
// already in the table before the run, 0), SETTLE_PREFILL_HOURS (the hours back they span, 720), SETTLE_IDS (time;
// random: request ids as the data plane made them before they were time-ordered), SETTLE_EXPLAIN (1; 0 skips the EXPLAIN pass), SETTLE_EXTRA_SQL (run
// after migrating, e.g. to try an index), SETTLE_SEED (1), SETTLE_ENTRY_EVENTS (25), SETTLE_COPY (1; 0 writes every batch through the partitioned table, as
// settlement did before it wrote into the day partitions). Autovacuum is off for the run's tables, so that the
// maintenance inserts leave behind (dead tuples, a GIN index's pending list) is done by a VACUUM at the end, on
// the same connection, and reported as its own line rather than landing on a worker at a random moment.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import pg from "pg";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import { type Database, pgQuery, type SqlRunner, type SqlTx } from "../../control-plane/src/db/client.ts";
import { copyInto } from "../../control-plane/src/db/copy-in.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { type EntryChecks, eventsOfEntries } from "../../control-plane/src/usage/redis-consumer.ts";
import { signedEntryFields, usageEntryKey } from "../../data-plane/src/usage/entry-signature.ts";
import { newRequestId } from "../../data-plane/src/server/request-id.ts";
import { freshDatabase } from "../helpers/postgres.ts";

const EVENTS = Number(process.env.SETTLE_EVENTS ?? 50_000);
const BATCH = Number(process.env.SETTLE_BATCH ?? 300);
const ACCOUNTS = Number(process.env.SETTLE_ACCOUNTS ?? 4);
const KEYS_PER_ACCOUNT = 5;
const PREFILL = Number(process.env.SETTLE_PREFILL ?? 0);
/** the prefilled rows' span back from now, in hours (default 30 days; 12 puts most in today's partition, as on a busy day) */
const PREFILL_HOURS = Number(process.env.SETTLE_PREFILL_HOURS ?? 720);
/** request ids: "time" as the data plane makes them (its millisecond, then random: server/request-id.ts), or "random" as it made them before */
const IDS = process.env.SETTLE_IDS ?? "time";
const EXPLAIN = process.env.SETTLE_EXPLAIN !== "0";
const ENTRY_EVENTS = Number(process.env.SETTLE_ENTRY_EVENTS ?? 25);
const WARMUP_BATCHES = 5;

// A small deterministic generator (mulberry32), so runs settle the same events.
let seed = Number(process.env.SETTLE_SEED ?? 1) >>> 0;
const rand = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
const hex = (bytes: number) => Array.from({ length: bytes }, () => int(0, 255).toString(16).padStart(2, "0")).join("");

/** On-CPU time of a process so far, in nanoseconds (/proc/<pid>/schedstat, first field). */
const onCpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
/** utime + stime in milliseconds (clock ticks: coarse, a cross-check). */
const ticksMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

const MODELS = [
  // model, protocol, upstream, prices (micro-units per 1M tokens: input, cached input, 5m write, 1h write, output)
  ["gpt-4o-2024-08-06", "openai", "openai", ["2500000", "1250000", "2500000", "2500000", "10000000"]],
  ["gpt-4o-mini-2024-07-18", "openai", "openai", ["150000", "75000", "150000", "150000", "600000"]],
  ["claude-sonnet-4-20250514", "anthropic", "anthropic", ["3000000", "300000", "3750000", "6000000", "15000000"]],
  ["gemini-2.5-flash", "gemini", "vertex", ["300000", "75000", "300000", "300000", "2500000"]],
  ["gpt-4.1-2025-04-14", "openai-responses", "azure", ["2000000", "500000", "2000000", "2000000", "8000000"]],
] as const;
const TAGS = ["team=search", "team=ads", "team=support", "env=prod", "env=staging", "feature=chat", "canary"];
const IPS = ["203.0.113.7", "203.0.113.42", "198.51.100.3", "198.51.100.77", "2001:db8::1", null];

interface Fixture {
  accounts: { id: string; keys: string[] }[];
}

/**
 * One call's event. Most calls succeed and are billed; a few are refused or fail (cost 0, no prices); a tenth
 * carry an end user and a sixth carry tags, as cost attribution is opt-in per client.
 */
function makeEvent(fx: Fixture, startedAt: number): UsageEvent {
  // One busy account takes half the traffic.
  const account = rand() < 0.5 ? fx.accounts[0]! : pick(fx.accounts);
  const [model, protocol, upstream, p] = pick(MODELS);
  const r = rand();
  const status = r < 0.97 ? 200 : r < 0.985 ? 429 : r < 0.995 ? 502 : 400;
  const ok = status === 200;
  const stream = rand() < 0.6;
  const promptTokens = ok ? int(50, 6000) : status === 502 ? int(50, 3000) : 0;
  const cachedTokens = ok && rand() < 0.3 ? Math.floor(promptTokens * rand() * 0.8) : 0;
  const cacheWrite5mTokens = ok && protocol === "anthropic" && rand() < 0.2 ? int(0, promptTokens - cachedTokens) : 0;
  const completionTokens = ok ? int(1, 1500) : 0;
  const reasoningTokens = ok && rand() < 0.15 ? Math.floor(completionTokens * rand()) : 0;
  const input = promptTokens - cachedTokens - cacheWrite5mTokens;
  const cost = ok
    ? Math.round(
        (input * Number(p[0]) +
          cachedTokens * Number(p[1]) +
          cacheWrite5mTokens * Number(p[2]) +
          completionTokens * Number(p[4])) /
          1e6,
      )
    : 0;
  const latencyMs = ok ? int(200, 20_000) : int(5, 2_000);
  return {
    requestId: IDS === "random" ? `req_${hex(12)}` : newRequestId(),
    keyId: pick(account.keys),
    accountId: account.id,
    model,
    protocol,
    upstream: status === 429 ? null : upstream,
    stream,
    promptTokens,
    completionTokens,
    reasoningTokens,
    cachedTokens,
    cost: String(cost),
    status,
    errorCode: ok ? null : status === 429 ? "rate_limited" : status === 502 ? "upstream_error" : "invalid_request",
    latencyMs,
    ttftMs: ok && stream ? int(100, Math.min(latencyMs, 3000)) : null,
    clientIp: pick(IPS),
    startedAt: new Date(startedAt).toISOString(),
    cacheWrite5mTokens,
    cacheWrite1hTokens: 0,
    prices: ok ? { input: p[0], cachedInput: p[1], cacheWrite5m: p[2], cacheWrite1h: p[3], output: p[4] } : null,
    // a stream the client cut before the upstream reported usage
    estimated: ok && stream && rand() < 0.003,
    endUser: rand() < 0.1 ? `user-${int(1, 2000)}` : null,
    tags: rand() < 0.15 ? Array.from(new Set(Array.from({ length: int(1, 3) }, () => pick(TAGS)))) : [],
  };
}

/**
 * The batches, as a control plane sees them at ~6,000 calls/s: new events in start order, plus a few
 * redeliveries (a data plane's spool replayed) and the exact counts that replace some estimates, a batch or
 * two later.
 */
function makeBatches(fx: Fixture, events: number, batch: number, t0: number): UsageEvent[][] {
  const out: UsageEvent[][] = [];
  let later: UsageEvent[] = [];
  let t = t0;
  for (let made = 0; made < events;) {
    const b: UsageEvent[] = later;
    later = [];
    while (b.length < batch && made < events) {
      const e = makeEvent(fx, t);
      t += int(0, 330) / 1000; // ~6,000/s
      made++;
      b.push(e);
      // marked as the data planes mark them (an exact count after an estimate; a spool replayed)
      if (e.estimated && rand() < 0.7)
        later.push({
          ...e,
          estimated: false,
          completionTokens: e.completionTokens + 40,
          cost: String(+e.cost + 7),
          maybeSettled: true,
        });
      else if (rand() < 0.002) later.push({ ...e, maybeSettled: true });
    }
    out.push(b);
  }
  if (later.length > 0) out.push(later);
  return out;
}

/** This process's CPU (user + system, all its threads) since `from`, in nanoseconds. */
const nodeCpuNs = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) * 1000;
};

const entryKey = usageEntryKey(randomBytes(32));
/** A batch as the Redis consumer reads it: stream entries of a replica's turn of events each, as signed JSON. */
const asEntries = (batch: UsageEvent[]): [string, string[]][] => {
  const entries: [string, string[]][] = [];
  for (let i = 0; i < batch.length; i += ENTRY_EVENTS)
    entries.push([`${i}-0`, signedEntryFields(entryKey, JSON.stringify(batch.slice(i, i + ENTRY_EVENTS)))]);
  return entries;
};
const dropped = (err: unknown) => {
  throw err; // the bench's events are all valid
};
const checks: EntryChecks = {
  key: entryKey,
  stream: "bench",
  onRefused: (r) => {
    throw new Error(`bench entry ${r.id} refused: ${r.reason}`); // the bench's entries are all signed
  },
};

/** A transaction runner on one connection that charges each statement's backend CPU to the statement. */
function measuredRunner(client: pg.Client, pid: number) {
  const byStatement = new Map<string, { calls: number; ns: number; rows: number }>();
  const label = (sql: string) => {
    const s = sql.trim().replace(/\s+/g, " ");
    if (s.startsWith("WITH n AS")) return "UPDATE usage_logs (estimate replaced)";
    if (s.startsWith("WITH g AS")) return "rollups of the rows written into partitions (WITH g AS)";
    if (/^(COPY|INSERT INTO) "usage_logs_/.test(s)) return `${s.split(" ")[0]} into a day partition`;
    return s.split(" ").slice(0, 3).join(" ");
  };
  const run = async (sql: string, params?: unknown[], prepared?: boolean) => {
    const name = label(sql);
    const before = onCpuNs(pid);
    const res = await client.query(pgQuery(sql, params, prepared));
    const ns = onCpuNs(pid) - before;
    const s = byStatement.get(name) ?? { calls: 0, ns: 0, rows: 0 };
    s.calls++;
    s.ns += ns;
    s.rows += res.rowCount ?? 0;
    byStatement.set(name, s);
    return res;
  };
  const copy = async (sql: string, data: string) => {
    const name = label(sql);
    const before = onCpuNs(pid);
    await copyInto(client, sql, data);
    const s = byStatement.get(name) ?? { calls: 0, ns: 0, rows: 0 };
    s.calls++;
    s.ns += onCpuNs(pid) - before;
    byStatement.set(name, s);
  };
  const runner: SqlRunner = {
    async transaction(fn) {
      await run("BEGIN");
      try {
        const tx: SqlTx = {
          exec: async (s) => void (await run(s)),
          query: async (s, p, prepared) => (await run(s, p, prepared)).rows,
          // SETTLE_COPY=0: every batch through the partitioned table (INSERT … ON CONFLICT and its triggers)
          ...(process.env.SETTLE_COPY === "0" ? {} : { copyIn: copy }),
        };
        const result = await fn(tx);
        await run("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
    },
    close: async () => undefined,
  };
  return { runner, byStatement };
}

/**
 * A runner that, before each statement, runs it under EXPLAIN (no COPY: EXPLAIN cannot run one, so the batch goes
 * through the partitioned table, the way settlement takes when a write into a partition fails) (ANALYZE, BUFFERS, WAL) inside a savepoint rolled
 * back afterwards, then runs it for real: the plans of one batch's statements, triggers included.
 */
function explainingRunner(client: pg.Client, plans: { sql: string; plan: string }[]): SqlRunner {
  const query = async (sql: string, params?: unknown[]) => {
    await client.query("SAVEPOINT explain");
    const res = await client.query<{ "QUERY PLAN": string }>(
      `EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF) ${sql}`,
      params,
    );
    await client.query("ROLLBACK TO SAVEPOINT explain");
    plans.push({ sql, plan: res.rows.map((r) => r["QUERY PLAN"]).join("\n") });
    return (await client.query(sql, params)).rows;
  };
  return {
    async transaction(fn) {
      await client.query("BEGIN");
      try {
        const result = await fn({ exec: async (s) => void (await query(s)), query: (s, p) => query(s, p) as never });
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
    },
    close: async () => undefined,
  };
}

const db = await freshDatabase("settle");
const client = new pg.Client({ connectionString: db.url });
try {
  await client.connect();
  const q = async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[];
  await q(`INSERT INTO accounts (id, name, balance_micro) SELECT gen_random_uuid(), 'acct-' || i, 1000000000000000
           FROM generate_series(1, ${ACCOUNTS}) AS i`);
  await q(`INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist)
           SELECT gen_random_uuid(), a.id, 'key-' || k, md5(a.id::text || k), 'sk-…', '{}', '{}'
           FROM accounts a, generate_series(1, ${KEYS_PER_ACCOUNT}) AS k`);
  const keys = await q<{ account_id: string; id: string }>(
    `SELECT account_id::text, id::text FROM api_keys ORDER BY account_id, name`,
  );
  const fx: Fixture = { accounts: [] };
  for (const k of keys) {
    const a = fx.accounts.find((x) => x.id === k.account_id);
    if (a) a.keys.push(k.id);
    else fx.accounts.push({ id: k.account_id, keys: [k.id] });
  }
  if (PREFILL > 0) {
    const t = performance.now();
    // Older usage (the last 30 days), in the shape settlement writes: most rows without tags or end user.
    await q(`INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, upstream, status,
               prompt_tokens, completion_tokens, cost_micro, latency_ms, stream, client_ip, started_at, input_tokens,
               input_price, cached_input_price, cache_write_5m_price, cache_write_1h_price, output_price, end_user, tags)
             SELECT gen_random_uuid(), ${IDS === "random" ? "'req_' || substr(md5(i::text), 1, 24)" : `'req_' || lpad(to_hex((${Date.now() - PREFILL_HOURS * 3_600_000} + i) % ${2 ** 40}), 10, '0') || substr(md5(i::text), 1, 14)`}, k.account_id, k.id, 'model-' || (i % 5), 'openai', 'openai', 200,
               100 + i % 900, 50 + i % 400, 10 + i % 1000, 100 + i % 2000, i % 5 < 3, '203.0.113.7',
               now() - interval '${PREFILL_HOURS} hours' - interval '1 minute' + (i * interval '${PREFILL_HOURS} hours' / ${PREFILL}), 100 + i % 900,
               2500000, 1250000, 2500000, 2500000, 10000000,
               CASE WHEN i % 10 = 0 THEN 'user-' || (i % 2000) END,
               CASE WHEN i % 7 = 0 THEN ARRAY['team=search', 'env=prod'] ELSE '{}' END
             FROM generate_series(1, ${PREFILL}) AS i
             JOIN (SELECT id, account_id, row_number() OVER (ORDER BY id) - 1 AS n FROM api_keys) k
               ON k.n = i % ${ACCOUNTS * KEYS_PER_ACCOUNT}`);
    await q(`VACUUM ANALYZE usage_logs`);
    await q(`CHECKPOINT`).catch(() => undefined); // superuser only; the WAL figures then start from a checkpoint
    console.log(
      `prefilled ${PREFILL.toLocaleString("en")} usage rows in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
  }
  if (process.env.SETTLE_EXTRA_SQL) await q(process.env.SETTLE_EXTRA_SQL);
  const tables = ["usage_logs", "usage_hourly", "ledger_entries", "accounts", "api_keys", "spend_periods"];
  // usage_logs is partitioned (a partitioned table has no storage of its own): its partitions are set instead
  const partitions = await q<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage_logs'::regclass`,
  );
  for (const t of [...tables.filter((t) => t !== "usage_logs"), ...partitions.map((p) => p.name)])
    await q(`ALTER TABLE "${t}" SET (autovacuum_enabled = false)`);

  const { pid } = (await q<{ pid: number }>(`SELECT pg_backend_pid() AS pid`))[0]!;
  const measured = measuredRunner(client, pid);
  const database: Database = { ...db.db, sql: measured.runner };
  const batches = makeBatches(fx, EVENTS, BATCH, Date.now() - 3600_000);
  const warm = batches.splice(0, WARMUP_BATCHES);
  for (const b of warm) await settleUsageBatch(database, eventsOfEntries(asEntries(b), dropped, checks));
  const streamed = batches.map(asEntries);
  measured.byStatement.clear();

  const events = batches.reduce((s, b) => s + b.length, 0);
  const lsn = async () => (await q<{ lsn: string }>(`SELECT pg_current_wal_insert_lsn()::text AS lsn`))[0]!.lsn;
  const walSince = async (from: string) =>
    Number(
      (await q<{ d: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::text AS d`, [from]))[0]!.d,
    );
  // This database's share of the WAL, by relation, when pg_walinspect is there (the server-wide LSN difference
  // counts other databases' work too). A checkpoint first, so full-page images only come from one during the run.
  const inspect = await q(`CREATE EXTENSION IF NOT EXISTS pg_walinspect`).then(
    () => true,
    () => false,
  );
  await q(`CHECKPOINT`).catch(() => undefined);
  const checkpoints = async () =>
    Number(
      (await q<{ n: string }>(`SELECT (checkpoints_timed + checkpoints_req)::text AS n FROM pg_stat_bgwriter`))[0]!.n,
    );
  const checkpoints0 = await checkpoints();
  const wal0 = await lsn();
  const cpu0 = onCpuNs(pid);
  const ticks0 = ticksMs(pid);
  const t0 = performance.now();
  let settled = 0;
  // per batch, CPU per event: the median is less moved by other work on the machine than the mean
  const perBatch: number[] = [];
  const nodePerBatch: number[] = [];
  const parsePerBatch: number[] = [];
  let nodeNs = 0;
  let parseNs = 0;
  for (const entries of streamed) {
    const p0 = process.cpuUsage();
    const b = eventsOfEntries(entries, dropped, checks);
    const parsed = nodeCpuNs(p0);
    parseNs += parsed;
    parsePerBatch.push(parsed / b.length);
    const before = onCpuNs(pid);
    const n0 = process.cpuUsage();
    settled += await settleUsageBatch(database, b);
    const node = nodeCpuNs(n0);
    nodeNs += node;
    nodePerBatch.push(node / b.length);
    perBatch.push((onCpuNs(pid) - before) / b.length);
  }
  const wallMs = performance.now() - t0;
  const cpuNs = onCpuNs(pid) - cpu0;
  const tickMs = ticksMs(pid) - ticks0;
  const walBytes = await walSince(wal0);
  const checkpointsDuring = (await checkpoints()) - checkpoints0;
  const walByRelation = inspect
    ? await q<{ what: string; bytes: string; fpi: string }>(
        `WITH r AS (
           SELECT resource_manager, record_length, fpi_length, xid,
             substring(block_ref from 'rel \\d+/(\\d+)/\\d+')::oid AS db, substring(block_ref from 'rel \\d+/\\d+/(\\d+)')::oid AS node
           FROM pg_get_wal_records_info($1, pg_current_wal_flush_lsn())
         ), me AS (SELECT oid FROM pg_database WHERE datname = current_database()),
         ours AS (SELECT DISTINCT xid FROM r, me WHERE r.db = me.oid AND xid <> 0)
         SELECT COALESCE(c.relname, r.resource_manager) AS what, sum(record_length)::text AS bytes, sum(fpi_length)::text AS fpi
         FROM r CROSS JOIN me LEFT JOIN pg_class c ON c.relfilenode = r.node AND r.db = me.oid
         WHERE r.db = me.oid OR (r.db IS NULL AND r.xid IN (SELECT xid FROM ours))
         GROUP BY 1 ORDER BY sum(record_length) DESC`,
        [wal0],
      )
    : [];
  const ourWal = walByRelation.reduce((s, r) => s + Number(r.bytes), 0);
  const ourFpi = walByRelation.reduce((s, r) => s + Number(r.fpi), 0);

  // The maintenance the run left behind (dead tuples of replaced estimates and updated accounts and keys, the
  // GIN pending list, the visibility map): one VACUUM on the same backend.
  const vwal0 = await lsn();
  const vcpu0 = onCpuNs(pid);
  for (const t of tables) await q(`VACUUM ${t}`);
  const vacuumNs = onCpuNs(pid) - vcpu0;
  const vacuumWal = await walSince(vwal0);

  const us = (ns: number) => (ns / 1000 / events).toFixed(1);
  console.log(
    `\n${events.toLocaleString("en")} events (${settled.toLocaleString("en")} new) in ${batches.length} batches of ~${BATCH}` +
      (PREFILL > 0 ? `, on ${PREFILL.toLocaleString("en")} prefilled usage rows` : "") +
      ` (after ${warm.length} warm-up batches)\n`,
  );
  console.log(`| per event | settlement | VACUUM afterwards |\n|---|---|---|`);
  console.log(`| Postgres backend CPU (schedstat) | **${us(cpuNs)} µs** | ${us(vacuumNs)} µs |`);
  const median = (list: number[]) => ([...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]! / 1000).toFixed(1);
  console.log(`| the same, median batch | ${median(perBatch)} µs | |`);
  console.log(`| Postgres backend CPU (utime+stime, 10 ms ticks) | ${us(tickMs * 1e6)} µs | |`);
  console.log(`| settling Node process CPU (process.cpuUsage) | **${us(nodeNs)} µs** | |`);
  console.log(`| the same, median batch | ${median(nodePerBatch)} µs | |`);
  console.log(
    `| Node CPU reading the events from stream entries (signature, JSON, validation; ${ENTRY_EVENTS} events an entry) | **${us(parseNs)} µs** | |`,
  );
  console.log(`| the same, median batch | ${median(parsePerBatch)} µs | |`);
  if (inspect)
    console.log(
      `| WAL, this database's records (pg_walinspect) | **${(ourWal / events).toFixed(0)} B** (full-page images ${(ourFpi / events).toFixed(0)} B; ${checkpointsDuring} checkpoints during the run) | |`,
    );
  console.log(
    `| WAL, whole server (other work counts) | ${(walBytes / events).toFixed(0)} B | ${(vacuumWal / events).toFixed(0)} B |`,
  );
  console.log(`| wall time | ${us(wallMs * 1e6)} µs (${(events / (wallMs / 1000)).toFixed(0)} events/s) | |`);
  console.log(`\n| statement | calls | backend CPU µs per event | share |\n|---|---|---|---|`);
  const total = [...measured.byStatement.values()].reduce((s, v) => s + v.ns, 0);
  for (const [name, s] of [...measured.byStatement.entries()].sort((a, b) => b[1].ns - a[1].ns)) {
    console.log(`| ${name} | ${s.calls} | ${us(s.ns)} | ${((100 * s.ns) / total).toFixed(0)}% |`);
  }

  if (inspect) {
    console.log(
      `\n| WAL by relation (record type when none) | B per event | of which full-page images |\n|---|---|---|`,
    );
    for (const r of walByRelation)
      console.log(`| ${r.what} | ${(Number(r.bytes) / events).toFixed(1)} | ${(Number(r.fpi) / events).toFixed(1)} |`);
  }

  const sizes = await q<{ name: string; size: string }>(
    `SELECT c.relname AS name, pg_size_pretty(pg_relation_size(c.oid)) AS size
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') AND (c.relname LIKE 'usage_%' OR c.relname LIKE 'ledger_%')
     ORDER BY pg_relation_size(c.oid) DESC`,
  );
  console.log(`\n| relation | size after the run |\n|---|---|`);
  for (const s of sizes) console.log(`| ${s.name} | ${s.size} |`);

  if (EXPLAIN) {
    const plans: { sql: string; plan: string }[] = [];
    const t = Date.now();
    const [b] = makeBatches(fx, BATCH, BATCH, t);
    // one estimate among them replaced, so that path is shown too
    const estimate = { ...b![0]!, estimated: true };
    await settleUsageBatch(database, [estimate]);
    b![0] = { ...estimate, estimated: false, cost: String(+estimate.cost + 1) };
    await settleUsageBatch({ ...db.db, sql: explainingRunner(client, plans) }, b!);
    console.log(
      `\nEXPLAIN (ANALYZE, BUFFERS, WAL) of each statement of one batch of ${b!.length} (the first of each kind):\n`,
    );
    const seen = new Map<string, number>();
    for (const p of plans) {
      const head = p.sql.trim().split("\n")[0]!;
      seen.set(head, (seen.get(head) ?? 0) + 1);
      if (seen.get(head) === 1) console.log(`--- ${head}\n${p.plan}\n`);
    }
    console.log(`statements in the batch: ${[...seen.values()].reduce((a, n) => a + n, 0)}`);
  }
} finally {
  await client.end();
  await db.drop();
}
