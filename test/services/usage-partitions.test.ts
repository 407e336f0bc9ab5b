import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../control-plane/src/db/client.ts";
import { loadMigrations, migrate } from "../../control-plane/src/db/migrate.ts";
import { backfillUsage } from "../../control-plane/src/usage/backfill.ts";
import {
  dropExpiredUsage,
  ensureUsagePartitions,
  listUsagePartitions,
  partitionName,
  usageRetentionDays,
} from "../../control-plane/src/usage/partitions.ts";
import { adminUrl, freshDatabase, urlFor } from "../helpers/postgres.ts";

// The usage log is partitioned by UTC day: partitions are created ahead, rows that landed in the default partition
// are moved into their day's partition, retention drops whole days and leaves the rollups alone, and an existing
// unpartitioned log is converted (by the migration when small, by the background copy when large).

const DAY = 86_400_000;
const today = Math.floor(Date.now() / DAY) * DAY;

let db: Awaited<ReturnType<typeof freshDatabase>>;
let accountId: string;
const q = <T>(sql: string, params: unknown[] = []) => db.db.sql.transaction((tx) => tx.query<T>(sql, params));

/** n rows for the account at `at` (+ i seconds), inserted through the parent table (the rollup trigger fires). */
const insertRows = (prefix: string, at: number, n: number, table = "usage_logs") =>
  q(
    `INSERT INTO ${table} (id, request_id, account_id, model, protocol, upstream, status, prompt_tokens, cost_micro, latency_ms, started_at)
     SELECT gen_random_uuid(), $2 || i, $1::uuid, 'm', 'openai', 'up', 200, 10, 7, 5, $3::timestamptz + i * interval '1 second'
     FROM generate_series(1, $4::int) AS i`,
    [accountId, prefix, new Date(at).toISOString(), n],
  );
const where = async (prefix: string) =>
  (
    await q<{ part: string; n: number }>(
      `SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM usage_logs WHERE request_id LIKE $1 || '%' GROUP BY 1`,
      [prefix],
    )
  ).map((r) => `${r.part}:${r.n}`);
const rollup = async () =>
  (
    await q<{ requests: string; cost: string }>(
      `SELECT coalesce(sum(requests), 0)::text AS requests, coalesce(sum(cost_micro), 0)::text AS cost FROM usage_hourly WHERE account_id = $1`,
      [accountId],
    )
  )[0]!;
const operatorRollup = async () =>
  (
    await q<{ requests: string }>(
      `SELECT coalesce(sum(requests), 0)::text AS requests FROM usage_operator_hourly WHERE account_id = $1`,
      [accountId],
    )
  )[0]!.requests;

beforeAll(async () => {
  db = await freshDatabase("parts");
  accountId = (await db.db.prisma.account.create({ data: { name: "acme" } })).id;
});
afterAll(async () => db?.drop());

describe("usage log partitions", () => {
  it("creates today's partition and a week ahead, once, and moves rows from the default partition into their day", async () => {
    // the migration made today and three days ahead; day 5 has none yet, so its rows land in the default partition
    await insertRows("ahead-", today + 5 * DAY + 60_000, 3);
    expect(await where("ahead-")).toEqual(["usage_logs_default:3"]);
    const before = await rollup();
    const made = await ensureUsagePartitions(db.db.prisma);
    expect(made).toEqual([4, 5, 6, 7].map((d) => partitionName(today + d * DAY)));
    expect(await where("ahead-")).toEqual([`${partitionName(today + 5 * DAY)}:3`]);
    expect(await rollup()).toEqual(before); // moved, not inserted again
    expect(await ensureUsagePartitions(db.db.prisma)).toEqual([]);
    const days = [...(await listUsagePartitions(db.db.prisma)).keys()];
    for (let d = 0; d <= 7; d++) expect(days).toContain(today + d * DAY);
    // a row of a day with a partition goes straight there
    await insertRows("today-", today + 3_600_000, 2);
    expect(await where("today-")).toEqual([`${partitionName(today)}:2`]);
  });

  it("gives a past day found in the default partition its own partition, and retention drops whole days only", async () => {
    await insertRows("old-", today - 40 * DAY + 1_000, 4);
    await insertRows("older-", today - 500 * DAY, 2); // beyond the days given partitions: stays in the default
    await insertRows("recent-", today - 10 * DAY, 3);
    await ensureUsagePartitions(db.db.prisma);
    expect(await where("old-")).toEqual([`${partitionName(today - 40 * DAY)}:4`]);
    expect(await where("older-")).toEqual(["usage_logs_default:2"]);
    expect(await where("recent-")).toEqual([`${partitionName(today - 10 * DAY)}:3`]);
    const before = await rollup();

    expect(await dropExpiredUsage(db.db.prisma, null)).toEqual({ dropped: [], deleted: 0 });
    const r = await dropExpiredUsage(db.db.prisma, 30);
    expect(r).toEqual({ dropped: [partitionName(today - 40 * DAY)], deleted: 2 });
    expect(await where("old-")).toEqual([]);
    expect(await where("older-")).toEqual([]);
    expect(await where("recent-")).toEqual([`${partitionName(today - 10 * DAY)}:3`]);
    expect(await where("today-")).toEqual([`${partitionName(today)}:2`]);
    expect(await rollup()).toEqual(before); // statistics keep the history
    // a day is kept until its whole day is past the cutoff
    const r2 = await dropExpiredUsage(db.db.prisma, 10);
    expect(r2.dropped).toEqual([]);
    expect(await where("recent-")).toEqual([`${partitionName(today - 10 * DAY)}:3`]);
    expect((await dropExpiredUsage(db.db.prisma, 9)).dropped).toEqual([partitionName(today - 10 * DAY)]);
  });

  it("reads MODELGATE_USAGE_RETENTION_DAYS: off by default, whole days otherwise", () => {
    expect(usageRetentionDays({})).toBeNull();
    expect(usageRetentionDays({ MODELGATE_USAGE_RETENTION_DAYS: "0" })).toBeNull();
    expect(usageRetentionDays({ MODELGATE_USAGE_RETENTION_DAYS: " 90 " })).toBe(90);
    expect(() => usageRetentionDays({ MODELGATE_USAGE_RETENTION_DAYS: "1.5" })).toThrow(/whole number/);
    expect(() => usageRetentionDays({ MODELGATE_USAGE_RETENTION_DAYS: "-3" })).toThrow(/whole number/);
    for (const bad of ["1e3", "0x10", "30.0", "9007199254740993"])
      expect(() => usageRetentionDays({ MODELGATE_USAGE_RETENTION_DAYS: bad }), bad).toThrow(/whole number/);
  });

  it("copies a large unpartitioned log across in batches, newest first, leaving usage_hourly as it was", async () => {
    await q(`CREATE TABLE usage_logs_unpartitioned (LIKE usage_logs INCLUDING DEFAULTS)`);
    await insertRows("legacy-", today - 2 * DAY, 25_000, "usage_logs_unpartitioned");
    const hourly = await rollup();
    const operator = BigInt(await operatorRollup());
    const progress: number[] = [];
    expect(await backfillUsage(db.db.prisma, (n) => progress.push(n))).toBe(25_000);
    expect(progress).toEqual([10_000, 20_000, 25_000]);
    expect(await where("legacy-")).toEqual([`${partitionName(today - 2 * DAY)}:25000`]);
    const [gone] = await q<{ t: string | null }>(`SELECT to_regclass('usage_logs_unpartitioned')::text AS t`);
    expect(gone!.t).toBeNull();
    expect(await rollup()).toEqual(hourly);
    expect(BigInt(await operatorRollup())).toBe(operator + 25_000n);
    expect(await backfillUsage(db.db.prisma)).toBe(0);
  });
});

describe("the migration converting an existing usage log", () => {
  it("keeps every row and the rollup, and drops the foreign keys", async () => {
    const name = `mg_partmig_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    const other = await openDatabase({ databaseUrl: urlFor(name) });
    try {
      const all = loadMigrations();
      const mine = all.findIndex((m) => m.name.endsWith("_usage_log_partitions"));
      expect(mine).toBeGreaterThan(0);
      await migrate(other.sql, all.slice(0, mine));
      const run = <T>(sql: string, params: unknown[] = []) => other.sql.transaction((tx) => tx.query<T>(sql, params));
      const [acct] = await run<{ id: string }>(
        `INSERT INTO accounts (id, name, updated_at) VALUES (gen_random_uuid(), 'a', now()) RETURNING id`,
      );
      await run(
        `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, upstream, status, cost_micro, latency_ms, started_at)
         SELECT gen_random_uuid(), 'r' || i, $1::uuid, 'm' || (i % 3), 'openai', 'up', 200, i, 5, now() - i * interval '1 minute'
         FROM generate_series(1, 3000) AS i`,
        [acct!.id],
      );
      const hourlyBefore = await run<{ s: string }>(`SELECT sum(cost_micro)::text AS s FROM usage_hourly`);
      await migrate(other.sql, all);
      const [after] = await run<{ n: number; s: string; parts: number }>(
        `SELECT count(*)::int AS n, sum(cost_micro)::text AS s, count(DISTINCT tableoid)::int AS parts FROM usage_logs`,
      );
      expect(after!.n).toBe(3000);
      expect(after!.s).toBe(String((3000 * 3001) / 2));
      expect(after!.parts).toBeGreaterThanOrEqual(1);
      expect(await run<{ s: string }>(`SELECT sum(cost_micro)::text AS s FROM usage_hourly`)).toEqual(hourlyBefore);
      const [op] = await run<{ s: string }>(`SELECT sum(cost_micro)::text AS s FROM usage_operator_hourly`);
      expect(op!.s).toBe(after!.s);
      const [fks] = await run<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'f' AND conrelid = 'usage_logs'::regclass`,
      );
      expect(fks!.n).toBe(0);
      const [old] = await run<{ t: string | null }>(`SELECT to_regclass('usage_logs_unpartitioned')::text AS t`);
      expect(old!.t).toBeNull();
    } finally {
      await other.close();
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    }
  });
});
