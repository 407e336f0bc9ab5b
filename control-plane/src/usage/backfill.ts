import type { Db } from "../db/client.ts";
import { createUsagePartition, listUsagePartitions } from "./partitions.ts";

// Converting a large unpartitioned usage log without stopping anything (migration 20261202090000): the migration
// renamed it usage_logs_unpartitioned and made the partitioned usage_logs live at once (settlement writes there
// from the first moment); this copies the old rows across in small transactions, newest first (the console's
// first pages are right first), each batch moved (deleted there, inserted here) in one transaction so a crash
// loses or doubles nothing, and drops the old table once it is empty. The copied rows are in usage_hourly
// already: the rollup trigger is told so (modelgate.usage_backfill) and adds them to the operators' rollup only.

export const BACKFILL_BATCH = 10_000;

const COLUMNS = `id, request_id, account_id, api_key_id, model, protocol, upstream, status, error_code, prompt_tokens,
  completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, ttft_ms, stream, client_ip, started_at,
  created_at, input_tokens, cache_write_5m_tokens, cache_write_1h_tokens, input_price, cached_input_price,
  cache_write_5m_price, cache_write_1h_price, output_price, estimated, end_user, tags, dropped`;

const MOVE = `
WITH batch AS (
  SELECT id FROM usage_logs_unpartitioned ORDER BY started_at DESC LIMIT $1 FOR UPDATE SKIP LOCKED
), moved AS (
  DELETE FROM usage_logs_unpartitioned o USING batch WHERE o.id = batch.id RETURNING o.*
), copied AS (
  INSERT INTO usage_logs (${COLUMNS}) SELECT ${COLUMNS} FROM moved ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT count(*) FROM moved)::int AS n`;

/** Whether an unpartitioned usage log is still waiting to be copied. */
export async function backfillPending(prisma: Db): Promise<boolean> {
  const [r] = await prisma.$queryRawUnsafe<{ t: string | null }[]>(
    `SELECT to_regclass('usage_logs_unpartitioned')::text AS t`,
  );
  return Boolean(r?.t);
}

/** Moves one batch; returns the rows moved (0: the old table is empty, and then dropped). */
export async function backfillBatch(prisma: Db, size = BACKFILL_BATCH): Promise<number> {
  if (!(await backfillPending(prisma))) return 0;
  const moved = await prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT set_config('modelgate.usage_backfill', 'on', true)`);
      const rows = await tx.$queryRawUnsafe<{ n: number }[]>(MOVE, size);
      return rows[0]?.n ?? 0;
    },
    { timeout: 120_000 },
  );
  if (moved > 0) return moved;
  // empty (what is left is locked by another copier, or nothing is): drop it when nothing is left at all
  const [left] = await prisma.$queryRawUnsafe<{ any: boolean }[]>(
    `SELECT EXISTS (SELECT 1 FROM usage_logs_unpartitioned) AS any`,
  );
  if (!left?.any) await prisma.$executeRawUnsafe(`DROP TABLE IF EXISTS usage_logs_unpartitioned`);
  return 0;
}

const DAY = 86_400_000;

/**
 * The day partitions the old rows need (from their first day, at most 400 days back, to their last), so they
 * are copied into their days rather than into the default partition.
 */
async function partitionsForOldRows(prisma: Db) {
  const [r] = await prisma.$queryRawUnsafe<{ first: Date | null; last: Date | null }[]>(
    `SELECT min(started_at) AS first, max(started_at) AS last FROM usage_logs_unpartitioned`,
  );
  if (!r?.first || !r.last) return;
  const existing = await listUsagePartitions(prisma);
  const last = Math.floor(new Date(r.last).getTime() / DAY) * DAY;
  const first = Math.max(Math.floor(new Date(r.first).getTime() / DAY) * DAY, last - 400 * DAY);
  for (let day = first; day <= last; day += DAY) if (!existing.has(day)) await createUsagePartition(prisma, day);
}

/** Copies everything left, batch after batch; returns the rows moved. */
export async function backfillUsage(prisma: Db, onBatch?: (moved: number) => void): Promise<number> {
  if (!(await backfillPending(prisma))) return 0;
  await partitionsForOldRows(prisma);
  let total = 0;
  for (;;) {
    const n = await backfillBatch(prisma);
    if (n === 0) return total;
    total += n;
    onBatch?.(total);
  }
}
