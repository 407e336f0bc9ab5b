import type { PolicyChange } from "@modelgate/data-plane";
import type { Database } from "../db/client.ts";

// Reads policy out of Postgres as the feed's entities (see data-plane/src/contract/policy-feed.ts), already
// serialised by Postgres (row_to_json puts "v" first and writes no spaces), so the control plane does no
// per-entity work beyond handing strings on: its CPU and memory per change do not depend on the key count.
//
// Which entities changed comes from the policy_changes table (kept by triggers) and a cursor: the pg_snapshot
// of the last read. A row whose transaction was not visible in that snapshot is new, whatever order
// transactions committed in, so no change is skipped however long a writer's transaction ran. Such a
// transaction either began after the snapshot (xid ≥ its xmax) or was running then (in its xip list): both are
// index look-ups on xid. (Not "xid ≥ xmin": xmin is the oldest transaction running anywhere in the cluster,
// and one long transaction elsewhere would make every read scan every row changed since it began.)

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

const KEY_FIELDS = (v: string) => `${v} AS "v", k.id::text AS "id", k.account_id::text AS "accountId", k.name AS "name",
  k.status::text AS "status", to_char(k.expires_at AT TIME ZONE 'UTC', ${ISO}) AS "expiresAt",
  k.quota_micro::text AS "quota", k.spent_micro::text AS "spent", k.allowed_models AS "allowedModels",
  k.ip_allowlist AS "ipAllowlist", json_build_object('rpm', k.rpm, 'tpm', k.tpm, 'concurrency', k.concurrency) AS "limits"`;

const ACCOUNT_FIELDS = (v: string) => `${v} AS "v", a.id::text AS "id", a.name AS "name", a.status::text AS "status",
  a.balance_micro::text AS "balance", a.spent_micro::text AS "spent",
  json_build_object('rpm', a.rpm, 'tpm', a.tpm, 'concurrency', a.concurrency) AS "limits",
  COALESCE((SELECT json_object_agg(p.model_id, json_build_object('input', p.input_price_micro::text,
    'output', p.output_price_micro::text, 'cachedInput', p.cached_input_price_micro::text,
    'cacheWrite5m', p.cache_write_5m_price_micro::text, 'cacheWrite1h', p.cache_write_1h_price_micro::text))
    FROM price_contracts p WHERE p.account_id = a.id), '{}'::json) AS "contracts"`;

// What budgets need beyond the entity (db/budgets): the subject's budget columns and its account's time zone,
// only for entities with a budget or a time zone other than UTC (null otherwise, costing nothing).
const KEY_BUDGET = `CASE WHEN k.budget_day_micro IS NOT NULL OR k.budget_week_micro IS NOT NULL OR k.budget_month_micro IS NOT NULL
  THEN json_build_object('kind', 'key', 'id', k.id, 'accountId', k.account_id, 'status', k.status,
    'tz', (SELECT time_zone FROM accounts WHERE id = k.account_id), 'day', k.budget_day_micro::text,
    'week', k.budget_week_micro::text, 'month', k.budget_month_micro::text)::text END`;
const ACCOUNT_BUDGET = `CASE WHEN a.time_zone <> 'UTC' OR a.budget_day_micro IS NOT NULL OR a.budget_week_micro IS NOT NULL OR a.budget_month_micro IS NOT NULL
  THEN json_build_object('kind', 'account', 'id', a.id, 'accountId', a.id, 'status', a.status, 'tz', a.time_zone,
    'day', a.budget_day_micro::text, 'week', a.budget_week_micro::text, 'month', a.budget_month_micro::text)::text END`;

// The planner cannot know how many rows are past the cursor (a just-assigned xid is beyond its statistics, and
// the in-progress list is a run-time array), so it may pick a sequential scan, and from the cost it then
// expects, spend a second on JIT compilation: per round. Index look-ups, no JIT.
const PLAN = "SET LOCAL enable_seqscan = off; SET LOCAL jit = off";

// An entity's version is its state's: the newest of its entity and money changes (policy_changes has a row of
// each kind per entity), so a payload read in one snapshot carries the version of everything it reflects. The
// money kinds' payloads hold the settled figures alone (see MONEY_*); the budgets' period figures are added by
// withBudgets. The version of the other kind of row, for the one read:
const STATE_VERSION = (kind: string, entity: string, version: string) => `GREATEST(${version}, (SELECT o.version
  FROM policy_changes o WHERE o.entity = ${entity} AND o.kind = CASE ${kind} WHEN 'key' THEN 'key.money'
  WHEN 'key.money' THEN 'key' WHEN 'account' THEN 'account.money' WHEN 'account.money' THEN 'account' END))`;

const MONEY_KEY = (v: string) => `${v} AS "v", k.spent_micro::text AS "spent"`;
const MONEY_ACCOUNT = (v: string) => `${v} AS "v", a.balance_micro::text AS "balance", a.spent_micro::text AS "spent"`;

// The changed entities and their data, as one cursor over the transaction's snapshot (see readChanges).
const CHANGES = `
SELECT ch.kind, ch.entity AS id, sv.v::text AS v,
  CASE ch.kind
    WHEN 'key' THEN (SELECT row_to_json(x)::text FROM (SELECT ${KEY_FIELDS("sv.v")} FROM api_keys k WHERE k.key_hash = ch.entity) x)
    WHEN 'account' THEN (SELECT row_to_json(x)::text FROM (SELECT ${ACCOUNT_FIELDS("sv.v")} FROM accounts a
      WHERE a.id = (CASE WHEN ch.kind = 'account' THEN ch.entity::uuid END)) x)
    WHEN 'key.money' THEN (SELECT row_to_json(x)::text FROM (SELECT ${MONEY_KEY("sv.v")} FROM api_keys k WHERE k.key_hash = ch.entity) x)
    WHEN 'account.money' THEN (SELECT row_to_json(x)::text FROM (SELECT ${MONEY_ACCOUNT("sv.v")} FROM accounts a
      WHERE a.id = (CASE WHEN ch.kind = 'account.money' THEN ch.entity::uuid END)) x)
  END AS json,
  CASE ch.kind
    WHEN 'key' THEN (SELECT ${KEY_BUDGET} FROM api_keys k WHERE k.key_hash = ch.entity)
    WHEN 'key.money' THEN (SELECT ${KEY_BUDGET} FROM api_keys k WHERE k.key_hash = ch.entity)
    WHEN 'account' THEN (SELECT ${ACCOUNT_BUDGET} FROM accounts a WHERE a.id = (CASE WHEN ch.kind = 'account' THEN ch.entity::uuid END))
    WHEN 'account.money' THEN (SELECT ${ACCOUNT_BUDGET} FROM accounts a WHERE a.id = (CASE WHEN ch.kind = 'account.money' THEN ch.entity::uuid END))
  END AS budget
FROM policy_changes ch
  CROSS JOIN LATERAL (SELECT ${STATE_VERSION("ch.kind", "ch.entity", "ch.version")} AS v) sv
WHERE (ch.xid >= pg_snapshot_xmax($1::pg_snapshot)::text::bigint
    OR ch.xid = ANY (ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip($1::pg_snapshot) x)))
  AND NOT pg_visible_in_snapshot(ch.xid::text::xid8, $1::pg_snapshot)
  -- a money change whose entity changed too, in this read whichever page that falls in, says nothing apart
  -- (the entity's payload, of the same snapshot, carries the same figures)
  AND NOT (ch.kind IN ('key.money', 'account.money') AND EXISTS (SELECT 1 FROM policy_changes w
    WHERE w.kind = CASE ch.kind WHEN 'key.money' THEN 'key' ELSE 'account' END AND w.entity = ch.entity
      AND NOT pg_visible_in_snapshot(w.xid::text::xid8, $1::pg_snapshot)))`;

/** A change as read, with what its budgets need (see withBudgets) when it has any. */
export type ReadChange = PolicyChange & { budget?: string | null };

/** One page of what changed since a cursor (see readChanges). */
export interface ChangePage {
  /** keys and accounts, with their data (null: deleted) */
  changes: ReadChange[];
  /** the catalog changed (at this version): rebuild it; -1 when it did not */
  catalogVersion: number;
  /** the snapshot every page was read from: where the next read continues once the last page is published */
  snapshot: string;
  /** whether this is the last page */
  last: boolean;
}

type Kind = "key" | "account" | "catalog" | "key.money" | "account.money";

/**
 * What changed since `cursor` (a pg_snapshot's text), handed on in pages of at most `pageSize` entities, all
 * read from one snapshot (a REPEATABLE READ transaction and a cursor over one statement, so however many
 * changed, Postgres runs the query once and memory holds one page). Each page names that snapshot, the next
 * cursor once the last page is published; `onPage` returning false stops the read (the feed moved on elsewhere)
 * and so does an error. Returns whether every page was handed on and accepted.
 */
export async function readChanges(
  db: Database,
  cursor: string,
  pageSize: number,
  handle: (page: ChangePage) => Promise<boolean>,
): Promise<boolean> {
  return paged(db, handle, (onPage) =>
    db.sql.transaction(async (tx) => {
      await tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      await tx.exec(PLAN);
      // The first statement fixes the transaction's snapshot: the cursor's query reads from it too.
      const [head] = await tx.query<{ snap: string }>(`SELECT pg_current_snapshot()::text AS snap`);
      await tx.query(`DECLARE policy_changes_read NO SCROLL CURSOR FOR ${CHANGES}`, [cursor]);
      for (;;) {
        const rows = await tx.query<{
          kind: Kind;
          id: string;
          v: string;
          json: string | null;
          budget: string | null;
        }>(`FETCH ${Math.max(1, Math.floor(pageSize))} FROM policy_changes_read`);
        const last = rows.length < pageSize;
        const page: ChangePage = { changes: [], catalogVersion: -1, snapshot: head!.snap, last };
        for (const r of rows) {
          if (r.kind === "catalog") page.catalogVersion = Number(r.v);
          // a money change of an entity that is gone (its deletion is a change of the entity): nothing to say
          else if ((r.kind === "key.money" || r.kind === "account.money") && r.json === null) continue;
          else page.changes.push({ kind: r.kind, id: r.id, v: Number(r.v), json: r.json, budget: r.budget });
        }
        if (!(await onPage(page))) return false;
        if (last) return true;
      }
    }),
  );
}

/**
 * Runs a read that hands on pages from inside its transaction. On Postgres each page goes to `handle` at once
 * (memory holds one page). PGlite has one connection, which `handle`'s own queries (budgets, the catalog) would
 * wait for until the transaction ends: there (embedded mode, small sets) the pages are collected, then handed on.
 */
async function paged<P>(
  db: Database,
  handle: (page: P) => Promise<boolean>,
  read: (onPage: (page: P) => Promise<boolean>) => Promise<boolean>,
): Promise<boolean> {
  if (db.kind === "postgres") return read(handle);
  const pages: P[] = [];
  await read(async (page) => (pages.push(page), true));
  for (const page of pages) if (!(await handle(page))) return false;
  return true;
}

/** Whether a cursor is ahead of this database (it came from another one, or from before a restore). */
export async function cursorFromElsewhere(db: Database, cursor: string): Promise<boolean> {
  const [row] = await db.sql.transaction((tx) =>
    tx.query<{ ahead: boolean }>(
      `SELECT pg_snapshot_xmax($1::pg_snapshot) > pg_snapshot_xmax(pg_current_snapshot()) AS ahead`,
      [cursor],
    ),
  );
  return row!.ahead;
}

// An entity read whole: the state version of its two policy_changes rows (c: the entity's, cm: its money's).
const FULL_VERSION = "COALESCE(GREATEST(c.version, cm.version), 0)";

const KEYS_PAGE = `
SELECT k.key_hash AS id, (SELECT row_to_json(x)::text FROM (SELECT ${KEY_FIELDS(FULL_VERSION)}) x) AS json,
  ${KEY_BUDGET} AS budget
FROM api_keys k LEFT JOIN policy_changes c ON c.kind = 'key' AND c.entity = k.key_hash
  LEFT JOIN policy_changes cm ON cm.kind = 'key.money' AND cm.entity = k.key_hash
WHERE k.key_hash > $1 ORDER BY k.key_hash LIMIT $2`;

const ACCOUNTS_PAGE = `
SELECT a.id::text AS id, (SELECT row_to_json(x)::text FROM (SELECT ${ACCOUNT_FIELDS(FULL_VERSION)}) x) AS json,
  ${ACCOUNT_BUDGET} AS budget
FROM accounts a LEFT JOIN policy_changes c ON c.kind = 'account' AND c.entity = a.id::text
  LEFT JOIN policy_changes cm ON cm.kind = 'account.money' AND cm.entity = a.id::text
WHERE a.id > $1::uuid ORDER BY a.id LIMIT $2`;

export interface FullRead {
  cursor: string;
  /** the highest version handed out when the read began */
  version: number;
  /** the catalog's version in the same snapshot */
  catalogVersion: number;
}

/**
 * Reads every key and account in pages of `pageSize`, all from one snapshot (REPEATABLE READ), handing each
 * page on before reading the next: memory holds one page, whatever the key count. On PGlite (one connection,
 * which `onPage`'s own queries, budgets, would wait for until the transaction ends: a full publication with a
 * budgeted entity hung) the pages are collected and handed on after it, as paged does for the other reads.
 */
export async function readAll(
  db: Database,
  pageSize: number,
  onPage: (changes: ReadChange[]) => Promise<void>,
): Promise<FullRead> {
  const collected: ReadChange[][] | null = db.kind === "postgres" ? null : [];
  const read = await db.sql.transaction(async (tx) => {
    await tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    await tx.exec("SET LOCAL jit = off");
    const [head] = await tx.query<{ snap: string; version: string; catalog: string | null }>(
      `SELECT pg_current_snapshot()::text AS snap, (SELECT last_value FROM policy_version_seq)::text AS version,
        (SELECT version::text FROM policy_changes WHERE kind = 'catalog' AND entity = '') AS catalog`,
    );
    for (const [kind, sql, start] of [
      ["account", ACCOUNTS_PAGE, "00000000-0000-0000-0000-000000000000"],
      ["key", KEYS_PAGE, ""],
    ] as const) {
      let after: string = start;
      for (;;) {
        const rows = await tx.query<{ id: string; json: string; budget: string | null }>(sql, [after, pageSize]);
        if (rows.length === 0) break;
        const page = rows.map((r) => ({ kind, id: r.id, v: versionOfRow(r.json), json: r.json, budget: r.budget }));
        if (collected) collected.push(page);
        else await onPage(page);
        after = rows[rows.length - 1]!.id;
        if (rows.length < pageSize) break;
      }
    }
    return { cursor: head!.snap, version: Number(head!.version), catalogVersion: Number(head!.catalog ?? 0) };
  });
  for (const page of collected ?? []) await onPage(page);
  return read;
}

const versionOfRow = (json: string) => Number(/^\{"v":(\d+)/.exec(json)?.[1] ?? 0);

/**
 * The budgeted keys and accounts of one time zone (to republish when its calendar day turned over: their
 * periods and period spend changed though no row did), handed on in pages of at most `pageSize` (one
 * statement's cursor, as readChanges). `onPage` returning false stops the read; returns whether all were accepted.
 */
export async function readBudgeted(
  db: Database,
  timeZone: string,
  pageSize: number,
  handle: (changes: ReadChange[]) => Promise<boolean>,
): Promise<boolean> {
  return paged(db, handle, (onPage) =>
    db.sql.transaction(async (tx) => {
      await tx.exec("SET LOCAL jit = off");
      await tx.query(
        `DECLARE policy_budgeted_read NO SCROLL CURSOR FOR
       SELECT 'account' AS kind, a.id::text AS id, (SELECT row_to_json(x)::text FROM (SELECT ${ACCOUNT_FIELDS(FULL_VERSION)}) x) AS json, ${ACCOUNT_BUDGET} AS budget
       FROM accounts a LEFT JOIN policy_changes c ON c.kind = 'account' AND c.entity = a.id::text
         LEFT JOIN policy_changes cm ON cm.kind = 'account.money' AND cm.entity = a.id::text
       WHERE a.time_zone = $1 AND (a.budget_day_micro IS NOT NULL OR a.budget_week_micro IS NOT NULL OR a.budget_month_micro IS NOT NULL)
       UNION ALL
       SELECT 'key', k.key_hash, (SELECT row_to_json(x)::text FROM (SELECT ${KEY_FIELDS(FULL_VERSION)}) x), ${KEY_BUDGET}
       FROM api_keys k JOIN accounts ka ON ka.id = k.account_id LEFT JOIN policy_changes c ON c.kind = 'key' AND c.entity = k.key_hash
         LEFT JOIN policy_changes cm ON cm.kind = 'key.money' AND cm.entity = k.key_hash
       WHERE ka.time_zone = $1 AND k.status = 'active' AND (k.budget_day_micro IS NOT NULL OR k.budget_week_micro IS NOT NULL OR k.budget_month_micro IS NOT NULL)`,
        [timeZone],
      );
      for (;;) {
        const rows = await tx.query<{ kind: "key" | "account"; id: string; json: string; budget: string | null }>(
          `FETCH ${Math.max(1, Math.floor(pageSize))} FROM policy_budgeted_read`,
        );
        if (rows.length === 0) return true;
        const changes = rows.map((r) => ({
          kind: r.kind,
          id: r.id,
          v: versionOfRow(r.json),
          json: r.json,
          budget: r.budget,
        }));
        if (!(await onPage(changes))) return false;
        if (rows.length < pageSize) return true;
      }
    }),
  );
}
