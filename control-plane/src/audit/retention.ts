import { wholeNumberEnv } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import { audit, SYSTEM_ACTOR } from "./record.ts";

// Audit log retention: the log is append-only (a database trigger refuses UPDATE, DELETE and TRUNCATE), and
// retention is its one deletion. Rows older than MODELGATE_AUDIT_RETENTION_DAYS go, a batch per transaction,
// each transaction naming its cutoff to the trigger (which lets through only rows older than it) and writing
// one `audit.prune` row that says what went, so the deletion is itself in the log. Unset (or 0): kept forever.

/** Rows deleted per transaction: a first run over years of history does not hold one huge transaction. */
export const PRUNE_BATCH = 5_000;

/** MODELGATE_AUDIT_RETENTION_DAYS: days an audit row is kept; null keeps every row forever (the default). */
export function auditRetentionDays(env: NodeJS.ProcessEnv = process.env): number | null {
  const days = wholeNumberEnv(env, "MODELGATE_AUDIT_RETENTION_DAYS", 0, { unit: "days", note: "0: keep forever" });
  return days === 0 ? null : days;
}

/** Deletes the rows older than `days` (recording each batch); returns how many went. */
export async function pruneAuditLog(prisma: Db, days: number | null, now = new Date()): Promise<number> {
  if (days === null) return 0;
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  let total = 0;
  for (;;) {
    const deleted = await prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT set_config('modelgate.audit_prune_before', ${cutoff.toISOString()}, true)`;
      const n = await tx.$executeRaw`
        DELETE FROM audit_logs WHERE id IN (
          SELECT id FROM audit_logs WHERE created_at < ${cutoff} ORDER BY created_at LIMIT ${PRUNE_BATCH})`;
      if (n > 0)
        await audit(tx, SYSTEM_ACTOR, {
          action: "audit.prune",
          subjectType: "audit_log",
          after: { retentionDays: days, deletedBefore: cutoff.toISOString(), deleted: n },
        });
      return n;
    });
    total += deleted;
    if (deleted < PRUNE_BATCH) return total;
  }
}

/** Hourly pruning (and once at start-up); the timer does not keep the process alive. */
export function startAuditRetention(prisma: Db, days: number | null, onError: (err: unknown) => void): () => void {
  if (days === null) return () => undefined;
  const run = () => void pruneAuditLog(prisma, days).catch(onError);
  const timer = setInterval(run, 3600_000);
  timer.unref();
  run();
  return () => clearInterval(timer);
}
