// The usage log at volume (`npm run bench:volume -- N`, N usage rows, default 1,000,000): a fresh database whose
// log holds N rows over the last 30 days (half of them in one account, the rest over 49 others; 3 keys each, 4
// models, 3 upstreams), the first VOLUME_SETTLED (20,000) of them written through settlement itself
// (settleUsageBatch), the rest in bulk (INSERT … SELECT generate_series, in statements of 500,000 rows, through
// the parent table so the rollup trigger fires as it does for settlement). Then, timed with the product's own
// service functions (what GraphQL's resolvers call): as the busy account, the usage log's first page, a page
// filtered by key and model, page 100 by cursor, 30-day statistics; as an operator, usage across customers over
// 7 and 30 days and upstream health; exports (to a temporary directory) of the busy account's last day, of
// enough days for ≥ 200,000 rows when a day holds fewer, of its whole log (CSV) and as JSON lines, in rows per
// second with the CPU per row of the COPY's backend and of this process, and the process's peak memory;
// settlement's Postgres CPU per call on the full log (its backend's /proc schedstat); and a retention pass that
// drops the oldest week of partitions. Prints one table; VOLUME_KEEP=1 keeps the database.
// VOLUME_DB=<name> measures a kept database again instead of seeding one (its log as the run that seeded it left
// it: a week fewer after its retention pass), and VOLUME_ONLY=export (or queries) measures the exports (or the
// customer's and operator's queries) alone.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { copyOutFrom } from "../../control-plane/src/db/copy-out.ts";
import { runExport } from "../../control-plane/src/exports/runner.ts";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { usageByAttribution, usageStats } from "../../control-plane/src/stats/aggregate.ts";
import { operatorUsage, upstreamHealth } from "../../control-plane/src/stats/operator.ts";
import { usagePage } from "../../control-plane/src/stats/usage-log.ts";
import { createUsagePartition, dropExpiredUsage } from "../../control-plane/src/usage/partitions.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { openDatabase } from "../../control-plane/src/db/client.ts";
import { freshDatabase, urlFor } from "../helpers/postgres.ts";
import {
  accountKeys,
  clientRunner,
  DAY,
  MODELS,
  onCpuNs,
  pct,
  seedAccounts,
  seedRows,
  usageEvent,
} from "./usage-data.ts";

const N = Number(process.argv[2] ?? process.env.VOLUME_ROWS ?? 1_000_000);
const SETTLED = Math.min(N, Number(process.env.VOLUME_SETTLED ?? 20_000));
const SPAN_DAYS = 30;
const REPEAT = Number(process.env.VOLUME_REPEAT ?? 20);
const CHUNK = 500_000;

const REUSE = process.env.VOLUME_DB;
const ONLY = process.env.VOLUME_ONLY;
if (ONLY && ONLY !== "export" && ONLY !== "queries")
  throw new Error("VOLUME_ONLY: export or queries are the parts that run alone");

const results: { what: string; figure: string; target?: string; met?: boolean }[] = [];
const record = (what: string, figure: string, target?: string, met?: boolean) => {
  results.push({ what, figure, target, met });
  console.log(`  ${what}: ${figure}`);
};

async function timed(what: string, targetMs: number | null, fn: () => Promise<unknown>) {
  await fn(); // warm
  const ms: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  const p50 = pct(ms, 50);
  const p95 = pct(ms, 95);
  record(
    what,
    `p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms`,
    targetMs === null ? undefined : `p95 < ${targetMs} ms`,
    targetMs === null ? undefined : p95 < targetMs,
  );
}

const db = REUSE
  ? { name: REUSE, url: urlFor(REUSE), db: await openDatabase({ databaseUrl: urlFor(REUSE) }), drop: async () => {} }
  : await freshDatabase("volume");
const prisma = db.db.prisma;
const ctx: ServiceContext = {
  prisma,
  copyOut: db.db.copyOut,
  snapshotChanged: () => undefined,
  masterKey: Buffer.alloc(32),
};
const client = new pg.Client({ connectionString: db.url });
await client.connect();
const q = async <T = Record<string, unknown>>(sql: string, params?: unknown[]) =>
  (await client.query(sql, params)).rows as T[];
// a kept database's "now" is when its seeded rows end
const now = REUSE
  ? Number(
      (
        await q<{ ms: string }>(
          `SELECT extract(epoch FROM max(started_at)) * 1000 AS ms FROM usage_logs WHERE request_id LIKE 'seed_%'`,
        )
      )[0]!.ms,
    ) + 1
  : Date.now();
const t0 = now - SPAN_DAYS * DAY;
const dataDir = mkdtempSync(join(tmpdir(), "mg-volume-"));
try {
  console.log(`bench:volume: ${N.toLocaleString("en")} usage rows in ${db.name}${REUSE ? " (kept)" : ""}`);

  const ids = REUSE ? await accountKeys(client) : await seedAccounts(client);
  if (!REUSE) for (let d = Math.floor(t0 / DAY) * DAY; d <= now + DAY; d += DAY) await createUsagePartition(prisma, d);
  const busy = ids.accountIds[0]!;
  const keyIds = ids.keyIds;

  // Row i (0 ≤ i < N) starts at t0 + i·span/N.
  const startOf = (i: number) => t0 + Math.floor((i * SPAN_DAYS * DAY) / N);

  // 1. Through settlement: the first SETTLED rows, in batches of 300 on one connection (its backend's CPU).
  const event = (i: number, at: number) => usageEvent(i, at, ids);
  const settler = new pg.Client({ connectionString: db.url });
  await settler.connect();
  const [{ pid }] = (await settler.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows as [{ pid: number }];
  const database = { ...db.db, sql: clientRunner(settler) };
  const settle = async (count: number, first: number, at: (i: number) => number) => {
    const cpu = onCpuNs(pid);
    const node = process.cpuUsage();
    const t = performance.now();
    for (let s = 0; s < count; s += 300) {
      const batch = [];
      for (let i = s; i < Math.min(count, s + 300); i++) batch.push(event(first + i, at(first + i)));
      await settleUsageBatch(database, batch);
    }
    const n = process.cpuUsage(node);
    return {
      pgUs: (onCpuNs(pid) - cpu) / 1000 / count,
      nodeUs: (n.user + n.system) / count,
      perSecond: count / ((performance.now() - t) / 1000),
    };
  };
  // a kept database is measured again as it is: nothing written to it
  const early = REUSE ? null : await settle(SETTLED, 0, startOf);
  if (early)
    record(
      `settlement on an empty log (${SETTLED.toLocaleString("en")} calls, batches of 300)`,
      `Postgres ${early.pgUs.toFixed(1)} µs/call, control plane ${early.nodeUs.toFixed(1)} µs/call, ${Math.round(early.perSecond)} calls/s`,
    );

  // 2. In bulk, through the parent table.
  let t = performance.now();
  if (!REUSE) {
    for (let lo = SETTLED; lo < N; lo += CHUNK) {
      const hi = Math.min(N, lo + CHUNK);
      await seedRows(client, { lo, hi, n: N, t0, spanMs: SPAN_DAYS * DAY }, ids);
      process.stdout.write(`\r  seeded ${hi.toLocaleString("en")} rows`);
    }
    process.stdout.write("\n");
    const seedS = (performance.now() - t) / 1000;
    t = performance.now();
    await q(`VACUUM ANALYZE usage_logs`);
    await q(`VACUUM ANALYZE usage_hourly`);
    await q(`VACUUM ANALYZE usage_operator_hourly`);
    const [size] = await q<{ heap: string; total: string }>(
      `SELECT pg_size_pretty(sum(pg_relation_size(c.oid))) AS heap, pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS total
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage_logs'::regclass`,
    );
    record(
      "seeding in bulk (rollup trigger included), then VACUUM ANALYZE",
      `${(N - SETTLED).toLocaleString("en")} rows in ${seedS.toFixed(0)} s (${Math.round((N - SETTLED) / seedS).toLocaleString("en")} rows/s), vacuum ${((performance.now() - t) / 1000).toFixed(0)} s; log ${size!.heap} heap, ${size!.total} with indexes`,
    );
  }

  // 3. As the busy account (half the rows).
  if (!ONLY || ONLY === "queries") {
    const k0 = keyIds[0]!;
    await timed("customer: usage log, first page (50)", 50, () => usagePage(ctx, busy, {}, 50));
    await timed("customer: usage log filtered by key and model", 50, () =>
      usagePage(ctx, busy, { apiKeyId: k0, model: MODELS[0] }, 50),
    );
    let after: string | null = null;
    for (let p = 1; p < 100; p++) after = (await usagePage(ctx, busy, {}, 50, after)).endCursor;
    const page100 = after;
    await timed("customer: usage log, page 100 by cursor", 50, () => usagePage(ctx, busy, {}, 50, page100));
    await timed("customer: statistics over 30 days by day", 100, () =>
      usageStats(ctx, busy, { from: new Date(now - 30 * DAY), to: new Date(now), granularity: "day", timeZone: "UTC" }),
    );

    // Cost attribution: the 100 largest end users (the daily attribution rollup and the edge days' rows) and tags
    // (the hourly tag rollup and the edge hours' rows), and the statistics filtered by one end user (an index
    // range of its rows) and by one tag (the hourly tag rollup, per key and model).
    const month = { from: new Date(now - 30 * DAY), to: new Date(now) };
    await timed("customer: spend by end user over 30 days (the 100 largest)", 100, () =>
      usageByAttribution(ctx, busy, month, "endUser"),
    );
    await timed("customer: spend by tag over 30 days (the 100 largest)", 100, () =>
      usageByAttribution(ctx, busy, month, "tag"),
    );
    await timed("customer: statistics over 30 days filtered by an end user", 100, () =>
      usageStats(ctx, busy, { ...month, endUser: "user-10", granularity: "day", timeZone: "UTC" }),
    );
    await timed("customer: statistics over 30 days filtered by a tag on a seventh of the calls", 100, () =>
      usageStats(ctx, busy, { ...month, tag: "team=search", granularity: "day", timeZone: "UTC" }),
    );

    // 4. As an operator.
    await timed("operator: usage across customers, 7 days", 200, () =>
      operatorUsage(ctx, new Date(now - 7 * DAY), new Date(now)),
    );
    await timed("operator: usage across customers, 30 days", 200, () =>
      operatorUsage(ctx, new Date(now - 30 * DAY), new Date(now)),
    );
    await timed("operator: upstream health, last 15 minutes", null, () => upstreamHealth(ctx, undefined, 15));
  }

  // 5. Exports: the busy account's last day, enough days for 200,000 rows when a day holds fewer, and its whole
  // log (memory must stay flat whatever the size); JSON lines once. With the load average, as others share the
  // machine.
  const perDay = N / 2 / SPAN_DAYS;
  const spans = [1, ...(perDay < 200_000 ? [Math.min(SPAN_DAYS, Math.ceil(200_000 / perDay))] : [])];
  const exportsRun: { days: number; format: "csv" | "jsonl" }[] = [
    ...spans.map((days) => ({ days, format: "csv" as const })),
    { days: SPAN_DAYS, format: "csv" },
    { days: spans[spans.length - 1]!, format: "jsonl" },
  ];
  if (ONLY === "queries") exportsRun.length = 0;
  // the exports' COPY runs on a connection of their own, whose backend's CPU is measured
  const exportPool = new pg.Pool({ connectionString: db.url, max: 1 });
  const exportPid = (await exportPool.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid;
  const exportCtx = { ...ctx, copyOut: copyOutFrom(exportPool), dataDir };
  for (const { days, format } of exportsRun) {
    const job = await prisma.export.create({
      data: {
        accountId: busy,
        format,
        filters: { from: new Date(now - days * DAY).toISOString(), to: new Date(now).toISOString() },
      },
    });
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const started = performance.now();
    const pgCpu = onCpuNs(exportPid);
    const nodeCpu = process.cpuUsage();
    await runExport(exportCtx, job.id);
    const s = (performance.now() - started) / 1000;
    const node = process.cpuUsage(nodeCpu);
    clearInterval(sampler);
    const done = await prisma.export.findUniqueOrThrow({ where: { id: job.id } });
    if (done.status !== "ready") throw new Error(`export ${done.status}: ${done.error}`);
    const bytes = statSync(join(dataDir, "exports", done.filePath!)).size;
    rmSync(join(dataDir, "exports", done.filePath!));
    const rate = done.rowCount / s;
    const pgUs = (onCpuNs(exportPid) - pgCpu) / 1000 / done.rowCount;
    const nodeUs = (node.user + node.system) / done.rowCount;
    record(
      `export (${format === "csv" ? "CSV" : "JSON lines"}) of the busy account's ${days === SPAN_DAYS ? "whole log" : `last ${days} day${days > 1 ? "s" : ""}`}`,
      `${done.rowCount.toLocaleString("en")} rows (${(bytes / 1048576).toFixed(0)} MB) in ${s.toFixed(2)} s: ${Math.round(rate).toLocaleString("en")} rows/s (load average ${loadavg()[0]!.toFixed(1)}); CPU per row: Postgres ${pgUs.toFixed(1)} µs, control plane ${nodeUs.toFixed(1)} µs, so ${Math.round(1e6 / Math.max(pgUs, nodeUs)).toLocaleString("en")} rows/s with a core each; peak RSS +${((peak - rss0) / 1048576).toFixed(0)} MB`,
      "≥ 100,000 rows/s, memory flat",
      rate >= 100_000,
    );
  }
  await exportPool.end();

  // 6. Settlement on the full log (calls starting now).
  if (early) {
    const late = await settle(SETTLED, N, () => Date.now());
    record(
      `settlement on the full log (${SETTLED.toLocaleString("en")} calls)`,
      `Postgres ${late.pgUs.toFixed(1)} µs/call (${(late.pgUs / early.pgUs).toFixed(2)}× the empty log's), control plane ${late.nodeUs.toFixed(1)} µs/call, ${Math.round(late.perSecond)} calls/s`,
      "≤ 20 µs/call, flat",
      late.pgUs <= 20,
    );

    // 7. Retention: the oldest week goes (days older than 23 days), while settlement goes on.
    const before = (await q<{ n: string }>(`SELECT count(*)::text AS n FROM usage_logs`))[0]!.n;
    let settling = true;
    const latencies: number[] = [];
    const background = (async () => {
      let i = 0;
      while (settling) {
        const s = performance.now();
        await settleUsageBatch(database, [event(10 * N + i++, Date.now())]);
        latencies.push(performance.now() - s);
      }
    })();
    t = performance.now();
    const r = await dropExpiredUsage(prisma, SPAN_DAYS - 7);
    const dropS = (performance.now() - t) / 1000;
    settling = false;
    await background;
    const left = (await q<{ n: string }>(`SELECT count(*)::text AS n FROM usage_logs`))[0]!.n;
    record(
      "retention pass (MODELGATE_USAGE_RETENTION_DAYS=23)",
      `${r.dropped.length} partitions, ${(Number(before) - Number(left)).toLocaleString("en")} rows, in ${(dropS * 1000).toFixed(0)} ms; a settlement batch meanwhile p95 ${pct(latencies, 95).toFixed(1)} ms (max ${Math.max(...latencies).toFixed(1)})`,
    );
  }

  console.log(`\n| ${N.toLocaleString("en")} usage rows (${db.name}) | figure | target | met |\n|---|---|---|---|`);
  for (const x of results)
    console.log(
      `| ${x.what} | ${x.figure} | ${x.target ?? ""} | ${x.met === undefined ? "" : x.met ? "yes" : "**no**"} |`,
    );
  await settler.end();
} finally {
  await client.end();
  rmSync(dataDir, { recursive: true, force: true });
  if (process.env.VOLUME_KEEP === "1") await db.db.close();
  else await db.drop();
}
