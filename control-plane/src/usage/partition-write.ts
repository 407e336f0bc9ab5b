import type { UsageEvent } from "@modelgate/data-plane";
import type { Database, SqlTx } from "../db/client.ts";
import { partitionsByDay, USAGE_PARTITIONS_SQL } from "./partitions.ts";
import { ROLLUP_NEW, rollupParams } from "./rollup-new.ts";
import { insertUsageSql, USAGE_COLUMNS, usageCopyText, usageRowParams } from "./usage-rows.ts";

// Settlement's usage rows, written straight into the log's partitions (issue 29: settlement's Postgres CPU per
// call). Through the partitioned table, each row costs Postgres its routing, the parsing of 31 array parameters
// and two statement triggers' aggregation of the rows: 19.2 µs a row in test/bench/settle-parts.ts, against 12.9
// for a COPY of the same rows into the day's partition (its rollups then cost one statement per batch, from the
// batch's sums). In bench:settle, settlement's Postgres CPU per event went from 54 to 41 µs. COPY cannot skip a
// row that exists, so it is given only the events whose request cannot have a row yet: those not marked
// maybeSettled (a resend, a replay, an exact count following an estimate). The marked ones go through an
// INSERT … ON CONFLICT into the same partition. The partition's unique (request_id, started_at) index holds
// exactly-once either way: an event wrongly unmarked makes the COPY fail, the transaction rolls back, and the
// batch is settled again the checked way (PartitionWriteFailed; settle.ts). The rollups are added by ROLLUP_NEW,
// as the log's triggers would.

/** A row could not be written into its partition (a row existing after all, a partition gone): nothing was. */
export class PartitionWriteFailed extends Error {
  constructor(readonly reason: unknown) {
    super(`settlement: writing into the usage log's partitions failed (${String(reason)}); settled the checked way`);
  }
}

const DAY = 86_400_000;
/** How long a list of the partitions is trusted: they are made days ahead and dropped long after their day. */
const PARTITIONS_TTL_MS = 60_000;
const partitions = new WeakMap<Database, { at: number; byDay: Map<number, string> }>();
/** A started_at as the data planes write it (toISOString): read alike here and by Postgres. */
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Forgets the partitions seen (after a write into them failed). */
export const forgetPartitions = (db: Database) => partitions.delete(db);

async function dayPartitions(db: Database, tx: SqlTx): Promise<Map<number, string>> {
  const known = partitions.get(db);
  if (known && Date.now() - known.at < PARTITIONS_TTL_MS) return known.byDay;
  const byDay = partitionsByDay(await tx.query<{ name: string }>(USAGE_PARTITIONS_SQL));
  partitions.set(db, { at: Date.now(), byDay });
  return byDay;
}

/**
 * Writes the batch's rows into their day partitions and rolls them up; returns the events whose rows are new.
 * Returns null when a row has no day partition (its day is older than the partitions, or its time is written
 * otherwise): the caller writes such a batch through the partitioned table. Throws PartitionWriteFailed when a
 * write fails; the transaction is then aborted.
 */
export async function writeIntoPartitions(
  db: Database,
  tx: SqlTx & Required<Pick<SqlTx, "copyIn">>,
  events: readonly UsageEvent[],
  batchId: string,
): Promise<UsageEvent[] | null> {
  const byDay = await dayPartitions(db, tx);
  const tables = new Map<string, { checked: UsageEvent[]; bulk: UsageEvent[] }>();
  for (const e of events) {
    const name = ISO_MS.test(e.startedAt) ? byDay.get(Math.floor(Date.parse(e.startedAt) / DAY) * DAY) : undefined;
    if (name === undefined) return null;
    let t = tables.get(name);
    if (t === undefined) tables.set(name, (t = { checked: [], bulk: [] }));
    (e.maybeSettled ? t.checked : t.bulk).push(e);
  }
  const fresh: UsageEvent[] = [];
  try {
    for (const [name, { checked, bulk }] of tables) {
      if (checked.length > 0) {
        const inserted = await tx.query<{ request_id: string }>(
          insertUsageSql(`"${name}"`),
          usageRowParams(checked, batchId),
          true,
        );
        const isNew = new Set(inserted.map((r) => r.request_id));
        for (const e of checked) if (isNew.has(e.requestId)) fresh.push(e);
      }
      if (bulk.length > 0) {
        await tx.copyIn(`COPY "${name}" (${USAGE_COLUMNS}) FROM STDIN`, usageCopyText(bulk, batchId));
        fresh.push(...bulk);
      }
    }
  } catch (err) {
    throw new PartitionWriteFailed(err);
  }
  if (fresh.length > 0) await tx.query(ROLLUP_NEW, rollupParams(fresh), true);
  return fresh;
}
