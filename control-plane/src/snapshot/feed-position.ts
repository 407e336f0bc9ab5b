import type { Database } from "../db/client.ts";
import type { FeedHead } from "./publisher.ts";

// Where the feed in Redis stood, recorded in Postgres (policy_feed_position), so that a control plane that
// finds the feed lost can bridge it (PolicyBus.bridge) even if it never saw it: it restarted together with
// Redis, or all of the platform did. Without it, only a control plane that had read the lost head knew its
// cursor, and the others published in full first (21 s at a million keys) while a revocation waited.
//
// What the cursor is: a pg_snapshot ("xmin:xmax:xip,…"). Snapshots are ordered only partly, by what they see:
// a snapshot taken later sees every transaction an earlier one saw, and `includes` below says so of two texts
// (xmax no lower, and none of the newer one's running transactions visible to the older one).
//
// Why it is safe to bridge from it:
// - The bridge's stream carries everything not visible in its base, whatever base is; a base that is older
//   than the lost feed's position only re-sends changes replicas hold (the same or a newer version changes
//   nothing: versions only grow). So the record may lag (a crash between an append and its record, or two
//   control planes' records racing), never break a replica.
// - It is recorded after the append (or the full publication's commit) succeeded, so it names a position some
//   feed held; and it only moves forward (`includes`), so a slow control plane's older record does not
//   overwrite a newer one.
// - A replica counts itself current on a bridge only if the cursor it last confirmed equals `base`
//   (data-plane redis-feed.ts). That rule stays "equal", not "includes", though the cursors could be compared:
//   a replica's cursor past `base` is either one the record lagged behind (it misses nothing) or one of a
//   history the database no longer has (Postgres restored to an earlier point: the record was restored with
//   it, while the replica holds entities and versions of the lost history), and the replica cannot tell which.
//   Equal means it holds exactly what the database held at `base` plus what the bridge sends. When the record
//   lagged, replicas still apply the bridge's changes (a revocation reaches them at once) and only say they are
//   not current (publishedSnapshotAgeMs grows) until the full epoch; and the record lags only in the rare
//   cases above, since every round records the cursor it appended.
// - A record ahead of this database (xmax beyond the current snapshot's: a dump restored into a cluster whose
//   transaction ids are behind the dumped one's; a physical restore brings the record back with the database,
//   consistent with it), or recorded in another database (`database`: the cluster's system
//   identifier and the database's oid, so a row a dump carried elsewhere), is not bridged from: a change whose
//   transaction id the bridge thinks visible could be missed. The control plane publishes in full as before.
//
// Cost: one single-row upsert per round that moved the cursor (a HOT update of one small row: ~0.3 ms in
// Postgres on the 2-core dev machine, in its own transaction after the round's appends, whose commit does not
// wait for the WAL flush, 3–5 ms there: a record a crash loses only lags), one per committed full publication,
// and one read when Redis has no feed. Nothing on the path of a change to the replicas: the append is done.

/** This database: its cluster's system identifier (new for every initdb) and its oid (new for every CREATE DATABASE). */
const DATABASE = `((SELECT system_identifier::text FROM pg_control_system()) || ':'
  || (SELECT oid::text FROM pg_database WHERE datname = current_database()))`;

/** Whether snapshot `a` sees every transaction snapshot `b` sees (both pg_snapshot texts). */
const includes = (a: string, b: string) => `(pg_snapshot_xmax(${a}::pg_snapshot) >= pg_snapshot_xmax(${b}::pg_snapshot)
  AND NOT EXISTS (SELECT 1 FROM pg_snapshot_xip(${a}::pg_snapshot) x WHERE pg_visible_in_snapshot(x, ${b}::pg_snapshot)))`;

/** Whether a cursor is ahead of this database (see cursorFromElsewhere in feed-sql.ts). */
const ahead = (c: string) => `pg_snapshot_xmax(${c}::pg_snapshot) > pg_snapshot_xmax(pg_current_snapshot())`;

/**
 * Records that the feed `feed` held `head` (call after the append or commit that put it there). Only forward:
 * a record that `head` does not include stays, unless that record is another database's or ahead of this one.
 */
export async function recordFeedPosition(db: Database, feed: string, head: FeedHead): Promise<void> {
  await db.sql.transaction(async (tx) => {
    // Not worth waiting for the WAL flush (milliseconds on a disk): a record a Postgres crash loses only lags.
    await tx.exec("SET LOCAL synchronous_commit = off");
    await tx.query(
      `INSERT INTO policy_feed_position AS p (feed, cursor, epoch, seq, database, recorded_at)
       VALUES ($1, $2, $3, $4, ${DATABASE}, now())
       ON CONFLICT (feed) DO UPDATE SET cursor = EXCLUDED.cursor, epoch = EXCLUDED.epoch, seq = EXCLUDED.seq,
         database = EXCLUDED.database, recorded_at = EXCLUDED.recorded_at
       WHERE p.database <> EXCLUDED.database OR ${ahead("p.cursor")} OR ${includes("EXCLUDED.cursor", "p.cursor")}`,
      [feed, head.cursor, head.epoch, head.seq],
    );
  });
}

/** Where a bridge starts from, and what it was (for a log line). */
export interface BridgeBase {
  cursor: string;
  /** "recorded": policy_feed_position; "seen": the head this control plane last read or left */
  from: "recorded" | "seen";
  /** the epoch and seq recorded with it (recorded only) */
  epoch?: string;
  seq?: number;
}

/**
 * The cursor a bridge for the lost feed `feed` starts from: the newer of the one recorded for it in this
 * database and `seen` (the cursor of the head this control plane last read, null if none), leaving out either
 * if it is ahead of this database; null when neither is left (publish in full).
 */
export async function bridgeBase(db: Database, feed: string | null, seen: string | null): Promise<BridgeBase | null> {
  const [row] = await db.sql.transaction((tx) =>
    tx.query<{ cursor: string; from: "recorded" | "seen"; epoch: string | null; seq: string | null }>(
      `SELECT c.cursor, c.source AS "from", c.epoch, c.seq::text AS seq FROM (
         SELECT cursor, 'recorded' AS source, epoch, seq FROM policy_feed_position
         WHERE feed = $1 AND database = ${DATABASE}
         UNION ALL SELECT $2::text, 'seen', NULL, NULL WHERE $2::text IS NOT NULL
       ) c
       WHERE NOT ${ahead("c.cursor")}
       ORDER BY pg_snapshot_xmax(c.cursor::pg_snapshot) DESC, c.source LIMIT 1`,
      [feed, seen],
    ),
  );
  if (!row) return null;
  const base: BridgeBase = { cursor: row.cursor, from: row.from };
  if (row.epoch !== null) base.epoch = row.epoch;
  if (row.seq !== null) base.seq = Number(row.seq);
  return base;
}
