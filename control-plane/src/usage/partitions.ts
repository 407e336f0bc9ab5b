import { wholeNumberEnv } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";

// The usage log is partitioned by UTC day on started_at (migration 20261202090000_usage_log_partitions). This
// module keeps its partitions: each day's is created ahead of the day (at start and every hour), rows that landed
// in the default partition meanwhile (no partition for their day yet) are moved into their day's partition when
// it is made, and retention drops whole days (MODELGATE_USAGE_RETENTION_DAYS) instead of deleting rows, so a
// month goes in a few catalogue updates however many rows it held. The hourly rollups keep their history: the
// statistics of a dropped day still answer from them.

const DAY = 86_400_000;
/** Days created ahead of today (UTC). */
export const DAYS_AHEAD = 7;
/** Rows in the default partition older than this many days are not given a partition of their own. */
const MAX_BACKDATE_DAYS = 400;
const PARTITION = /^usage_logs_p(\d{4})(\d{2})(\d{2})$/;
// Several control planes may run the job at once: one at a time does (pg_advisory_xact_lock).
const LOCK = 4242000029;

/** MODELGATE_USAGE_RETENTION_DAYS: days of usage log kept; null (unset or 0) keeps every day (the default). */
export function usageRetentionDays(env: NodeJS.ProcessEnv = process.env): number | null {
  const days = wholeNumberEnv(env, "MODELGATE_USAGE_RETENTION_DAYS", 0, { unit: "days", note: "0: keep forever" });
  return days === 0 ? null : days;
}

const dayStart = (t: number) => Math.floor(t / DAY) * DAY;
export const partitionName = (day: number) =>
  `usage_logs_p${new Date(day).toISOString().slice(0, 10).replace(/-/g, "")}`;
const iso = (t: number) => new Date(t).toISOString();

/** The usage log's partitions' names (the default one's too). */
export const USAGE_PARTITIONS_SQL = `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = 'usage_logs'::regclass`;

/** The day partitions that exist, by the start of their day (epoch ms, UTC). */
export async function listUsagePartitions(prisma: Db): Promise<Map<number, string>> {
  return partitionsByDay(await prisma.$queryRawUnsafe<{ name: string }[]>(USAGE_PARTITIONS_SQL));
}

/** Of the log's partitions' names, the day partitions by the start of their day (epoch ms, UTC). */
export function partitionsByDay(rows: readonly { name: string }[]): Map<number, string> {
  const out = new Map<number, string>();
  for (const { name } of rows) {
    const m = PARTITION.exec(name);
    if (m) out.set(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])), name);
  }
  return out;
}

/**
 * Creates the partition of one UTC day, moving into it the rows the default partition holds for that day. The
 * table is made apart and attached (ATTACH takes a lighter lock on usage_logs than CREATE … PARTITION OF: reads and
 * settlement of other days go on); the default partition is locked against inserts first, so no row of the day
 * can land there between the move and the attach. Returns false when the partition existed already.
 */
export async function createUsagePartition(prisma: Db, day: number): Promise<boolean> {
  const name = partitionName(day);
  const from = iso(day);
  const to = iso(day + DAY);
  return prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${LOCK})`);
      const [exists] = await tx.$queryRawUnsafe<{ t: string | null }[]>(`SELECT to_regclass($1)::text AS t`, name);
      if (exists?.t) return false;
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '5s'`);
      await tx.$executeRawUnsafe(`LOCK TABLE usage_logs_default IN SHARE ROW EXCLUSIVE MODE`);
      await tx.$executeRawUnsafe(`CREATE TABLE "${name}" (LIKE usage_logs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
      const moved = await tx.$executeRawUnsafe(
        `WITH m AS (DELETE FROM usage_logs_default WHERE started_at >= $1::timestamptz AND started_at < $2::timestamptz
           RETURNING *)
         INSERT INTO "${name}" SELECT * FROM m`,
        from,
        to,
      );
      void moved;
      await tx.$executeRawUnsafe(
        `ALTER TABLE usage_logs ATTACH PARTITION "${name}" FOR VALUES FROM ('${from}') TO ('${to}')`,
      );
      return true;
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

/**
 * Makes sure today's partition and DAYS_AHEAD days after it exist, and gives every day that has rows in the
 * default partition (within MAX_BACKDATE_DAYS, and not before the retention) a partition of its own. Returns the
 * partitions created.
 */
export async function ensureUsagePartitions(
  prisma: Db,
  now = Date.now(),
  retentionDays: number | null = null,
): Promise<string[]> {
  const today = dayStart(now);
  const existing = await listUsagePartitions(prisma);
  const oldest = today - Math.min(MAX_BACKDATE_DAYS, retentionDays ?? MAX_BACKDATE_DAYS) * DAY;
  const stray = await prisma.$queryRawUnsafe<{ day: Date }[]>(
    `SELECT DISTINCT date_trunc('day', started_at, 'UTC') AS day FROM usage_logs_default
     WHERE started_at >= $1::timestamptz AND started_at < $2::timestamptz`,
    iso(oldest),
    iso(today + (DAYS_AHEAD + 1) * DAY),
  );
  const days = new Set<number>(stray.map((r) => new Date(r.day).getTime()));
  for (let d = 0; d <= DAYS_AHEAD; d++) days.add(today + d * DAY);
  const made: string[] = [];
  for (const day of [...days].sort((a, b) => a - b)) {
    if (existing.has(day)) continue;
    if (await createUsagePartition(prisma, day)) made.push(partitionName(day));
  }
  return made;
}

/**
 * Retention: drops the day partitions wholly older than `days` days (a day goes once its end is past the
 * cutoff) and deletes the default partition's rows before the cutoff. Dropping a partition takes a short
 * exclusive lock on usage_logs; with lock_timeout it gives way to running queries and is tried again at the
 * next pass instead of queueing everything behind it. The rollups and the ledger are not touched. Returns the
 * partitions dropped and the default partition's rows deleted.
 */
export async function dropExpiredUsage(
  prisma: Db,
  days: number | null,
  now = Date.now(),
): Promise<{ dropped: string[]; deleted: number }> {
  if (days === null) return { dropped: [], deleted: 0 };
  const cutoff = dayStart(now) - days * DAY;
  const dropped: string[] = [];
  for (const [day, name] of [...(await listUsagePartitions(prisma))].sort(([a], [b]) => a - b)) {
    if (day + DAY > cutoff) continue;
    const ok = await prisma
      .$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '2s'`);
        await tx.$executeRawUnsafe(`DROP TABLE IF EXISTS "${name}"`);
        return true;
      })
      .catch((err: unknown) => {
        if (/lock timeout/i.test(String((err as Error)?.message))) return false;
        throw err;
      });
    if (ok) dropped.push(name);
  }
  const deleted = await prisma.$executeRawUnsafe(
    `DELETE FROM usage_logs_default WHERE started_at < $1::timestamptz`,
    iso(cutoff),
  );
  return { dropped, deleted };
}

/** One pass of the job: partitions ahead, then retention. */
export async function maintainUsagePartitions(prisma: Db, retentionDays: number | null, now = Date.now()) {
  const created = await ensureUsagePartitions(prisma, now, retentionDays);
  const expired = await dropExpiredUsage(prisma, retentionDays, now);
  return { created, ...expired };
}

/** At start and every hour; the timer does not keep the process alive. */
export function startUsagePartitions(
  prisma: Db,
  retentionDays: number | null,
  onError: (err: unknown) => void,
  onDone?: (r: Awaited<ReturnType<typeof maintainUsagePartitions>>) => void,
): () => void {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    void maintainUsagePartitions(prisma, retentionDays)
      .then((r) => onDone?.(r), onError)
      .finally(() => (running = false));
  };
  const timer = setInterval(run, 3600_000);
  timer.unref();
  run();
  return () => clearInterval(timer);
}
