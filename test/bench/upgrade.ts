// Converting an existing usage log (`npm run bench:upgrade -- N`, N rows, default 1,000,000): what an operator
// upgrading from a release before the partitioned log (migration 20261202090000_usage_log_partitions) goes
// through, measured. A fresh database is migrated up to just before that migration, and its (then
// unpartitioned) usage_logs seeded with N rows over 30 days through its rollup trigger, as bench:volume seeds
// them. Then:
//   1. every later migration, timed one by one (the control plane applies them in one transaction at start,
//      so their sum is how long it holds the log's locks: settlement waits that long, calls do not);
//   2. the background copy the control plane runs after start (usage/backfill.ts), while settlement goes on as at
//      300 calls a second (a batch of 300 each second, as MODELGATE_SETTLE_INTERVAL_MS does) and the customer's
//      usage log first page is read twice a second: rows/s over the copy (first and last tenth, to show whether
//      it slows as the old table empties), settlement batches' and the page's latency before and during it, the
//      database's peak size;
//   3. the result checked: every row in the partitioned log once, in its day's partition, its cost sum
//      unchanged, usage_hourly unchanged but for the calls settled meanwhile, the operators' hourly and daily
//      rollups equal to the log, the old table gone. A difference fails the run.
// Prints one table; UPGRADE_KEEP=1 keeps the database.
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { openDatabase } from "../../control-plane/src/db/client.ts";
import { loadMigrations, migrate } from "../../control-plane/src/db/migrate.ts";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { usagePage } from "../../control-plane/src/stats/usage-log.ts";
import { backfillUsage } from "../../control-plane/src/usage/backfill.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import { adminUrl, urlFor } from "../helpers/postgres.ts";
import { clientRunner, DAY, pct, seedAccounts, seedRows, usageEvent } from "./usage-data.ts";

const N = Number(process.argv[2] ?? process.env.UPGRADE_ROWS ?? 1_000_000);
const SPAN_DAYS = 30;
const CHUNK = 500_000;
const SETTLE_BATCH = 300;
const FIRST_NEW = "_usage_log_partitions";

const rows: { what: string; figure: string }[] = [];
const record = (what: string, figure: string) => {
  rows.push({ what, figure });
  console.log(`  ${what}: ${figure}`);
};
const ms = (x: number) => `${x.toFixed(x < 10 ? 1 : 0)} ms`;
const latencies = (xs: number[]) =>
  xs.length === 0
    ? "none"
    : `p50 ${ms(pct(xs, 50))}, p95 ${ms(pct(xs, 95))}, max ${ms(Math.max(...xs))} (${xs.length})`;

const name = `mg_upgrade_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE "${name}"`);
const url = urlFor(name);
const db = await openDatabase({ databaseUrl: url });
const client = new pg.Client({ connectionString: url });
await client.connect();
const q = async <T = Record<string, unknown>>(sql: string, params?: unknown[]) =>
  (await client.query(sql, params)).rows as T[];
const dbSize = async () =>
  Number((await q<{ b: string }>(`SELECT pg_database_size(current_database())::text AS b`))[0]!.b);
const gb = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GB`;

try {
  console.log(`bench:upgrade: ${N.toLocaleString("en")} usage rows in ${name}`);
  const all = loadMigrations();
  const first = all.findIndex((m) => m.name.endsWith(FIRST_NEW));
  if (first < 0) throw new Error(`no migration named *${FIRST_NEW}`);
  await migrate(db.sql, all.slice(0, first));

  // The log as the earlier release kept it.
  const ids = await seedAccounts(client);
  const now = Date.now();
  const t0 = now - SPAN_DAYS * DAY;
  let t = performance.now();
  for (let lo = 0; lo < N; lo += CHUNK) {
    await seedRows(client, { lo, hi: Math.min(N, lo + CHUNK), n: N, t0, spanMs: SPAN_DAYS * DAY }, ids);
    process.stdout.write(`\r  seeded ${Math.min(N, lo + CHUNK).toLocaleString("en")} rows`);
  }
  process.stdout.write("\n");
  await q(`VACUUM ANALYZE usage_logs`);
  const seeded = await dbSize();
  record(
    "the earlier release's log, seeded (rollup trigger included), then VACUUM ANALYZE",
    `${N.toLocaleString("en")} rows in ${((performance.now() - t) / 1000).toFixed(0)} s; database ${gb(seeded)}`,
  );
  const sums = async () =>
    (
      await q<{ log_n: string; log_cost: string; hourly_n: string; hourly_cost: string }>(
        `SELECT (SELECT count(*) FROM usage_logs)::text AS log_n, (SELECT coalesce(sum(cost_micro), 0) FROM usage_logs)::text AS log_cost,
                (SELECT coalesce(sum(requests), 0) FROM usage_hourly)::text AS hourly_n,
                (SELECT coalesce(sum(cost_micro), 0) FROM usage_hourly)::text AS hourly_cost`,
      )
    )[0]!;
  const before = await sums();
  if (Number(before.log_n) !== N || before.hourly_n !== before.log_n || before.hourly_cost !== before.log_cost)
    throw new Error(`seeded log and rollup disagree: ${JSON.stringify(before)}`);

  // 1. The migrations since, one by one.
  let migrationsMs = 0;
  const slowest: string[] = [];
  for (let i = first; i < all.length; i++) {
    t = performance.now();
    await migrate(db.sql, all.slice(0, i + 1));
    const took = performance.now() - t;
    migrationsMs += took;
    if (took >= 100) slowest.push(`${all[i]!.name.replace(/^\d+_/, "")} ${ms(took)}`);
  }
  record(
    `the ${all.length - first} migrations since (the control plane applies them in one transaction at start)`,
    `${(migrationsMs / 1000).toFixed(1)} s in all; ${slowest.join(", ") || "each under 100 ms"}`,
  );

  // 2. The background copy, with settlement and the customer's first page going on.
  const ctx: ServiceContext = {
    prisma: db.prisma,
    copyOut: db.copyOut,
    snapshotChanged: () => undefined,
    masterKey: Buffer.alloc(32),
  };
  const settler = new pg.Client({ connectionString: url });
  await settler.connect();
  const settleDb = { ...db, sql: clientRunner(settler) };
  let next = 10 * N;
  let settledCost = 0n;
  let settledCalls = 0;
  const settleOnce = async () => {
    const batch: UsageEvent[] = [];
    for (let k = 0; k < SETTLE_BATCH; k++) {
      const e = usageEvent(next++, Date.now(), ids);
      settledCost += BigInt(e.cost);
      batch.push(e);
    }
    const s = performance.now();
    await settleUsageBatch(settleDb, batch);
    settledCalls += batch.length;
    return performance.now() - s;
  };
  /** Runs `fn` every `everyMs` until `until` resolves; its durations. */
  const every = async (everyMs: number, until: Promise<unknown>, fn: () => Promise<number>) => {
    let done = false;
    void until.finally(() => (done = true));
    const out: number[] = [];
    while (!done) {
      const started = performance.now();
      out.push(await fn());
      const wait = everyMs - (performance.now() - started);
      if (wait > 0 && !done)
        await Promise.race([new Promise((r) => setTimeout(r, wait)), until.catch(() => undefined)]);
    }
    return out;
  };
  const firstPage = async () => {
    const s = performance.now();
    await usagePage(ctx, ids.accountIds[0]!, {}, 50);
    return performance.now() - s;
  };

  // before the copy: settlement alone for 10 s
  const quiet = await every(1000, new Promise((r) => setTimeout(r, 10_000)), settleOnce);
  let peak = await dbSize();
  const marks: { at: number; moved: number }[] = [];
  t = performance.now();
  const copy = backfillUsage(db.prisma, (moved) => marks.push({ at: performance.now(), moved }));
  const [moved, during, pages] = await Promise.all([
    copy,
    every(1000, copy, settleOnce),
    every(500, copy, firstPage),
    every(5000, copy, async () => ((peak = Math.max(peak, await dbSize())), 0)),
  ]);
  const copyS = (performance.now() - t) / 1000;
  const rate = (from: number, to: number) => {
    const a = marks[Math.max(0, from)]!;
    const b = marks[Math.min(marks.length - 1, to)]!;
    return Math.round((b.moved - a.moved) / ((b.at - a.at) / 1000)).toLocaleString("en");
  };
  const tenth = Math.max(1, Math.floor(marks.length / 10));
  record(
    "the background copy (batches of 10,000, newest first)",
    `${moved.toLocaleString("en")} rows in ${copyS.toFixed(0)} s: ${Math.round(moved / copyS).toLocaleString("en")} rows/s (first tenth ${rate(0, tenth)}, last tenth ${rate(marks.length - 1 - tenth, marks.length - 1)}; load average ${loadavg()[0]!.toFixed(1)}); database at most ${gb(peak)} (${gb(seeded)} before)`,
  );
  record(`a settlement batch of ${SETTLE_BATCH} calls, before the copy`, latencies(quiet));
  record(`a settlement batch of ${SETTLE_BATCH} calls, during the copy`, latencies(during));
  record("the customer's usage log first page, during the copy", latencies(pages));

  // 3. Nothing lost, nothing doubled.
  const after = await sums();
  const [check] = await q<{ op_h: string; op_d: string; old: string | null; in_default: string; ids: string }>(
    `SELECT (SELECT coalesce(sum(cost_micro), 0) FROM usage_operator_hourly)::text AS op_h,
            (SELECT coalesce(sum(cost_micro), 0) FROM usage_operator_daily)::text AS op_d,
            to_regclass('usage_logs_unpartitioned')::text AS old,
            (SELECT count(*) FROM usage_logs_default)::text AS in_default,
            (SELECT count(DISTINCT id) FROM usage_logs)::text AS ids`,
  );
  const expectN = BigInt(N + settledCalls);
  const expectCost = BigInt(before.log_cost) + settledCost;
  const problems = [
    BigInt(after.log_n) !== expectN && `log rows ${after.log_n}, expected ${expectN}`,
    BigInt(check!.ids) !== expectN && `distinct ids ${check!.ids}, expected ${expectN}`,
    BigInt(after.log_cost) !== expectCost && `log cost ${after.log_cost}, expected ${expectCost}`,
    BigInt(after.hourly_cost) !== expectCost && `usage_hourly cost ${after.hourly_cost}, expected ${expectCost}`,
    check!.op_h !== after.log_cost && `operators' hourly cost ${check!.op_h}, log ${after.log_cost}`,
    check!.op_d !== after.log_cost && `operators' daily cost ${check!.op_d}, log ${after.log_cost}`,
    check!.old !== null && "usage_logs_unpartitioned still there",
    check!.in_default !== "0" && `${check!.in_default} rows in the default partition`,
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`the converted log disagrees: ${problems.join("; ")}`);
  record(
    "checked after the copy",
    `${after.log_n} rows (${N.toLocaleString("en")} copied + ${settledCalls.toLocaleString("en")} settled), each once and in its day's partition; cost sums of the log, usage_hourly and the operators' hourly and daily rollups equal; old table dropped`,
  );
  await settler.end();

  console.log(`\n| converting ${N.toLocaleString("en")} usage rows (${name}) | figure |\n|---|---|`);
  for (const r of rows) console.log(`| ${r.what} | ${r.figure} |`);
} finally {
  await client.end();
  await db.close();
  if (process.env.UPGRADE_KEEP !== "1") await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.end();
}
