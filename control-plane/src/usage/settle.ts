import { type BudgetCalendar, budgetPeriods, type UsageEvent } from "@modelgate/data-plane";
import { controlCalendar } from "../budgets/calendar.ts";
import type { Database, SqlTx } from "../db/client.ts";
import { forgetPartitions, PartitionWriteFailed, writeIntoPartitions } from "./partition-write.ts";
import { inputOf, insertUsageSql, pgArray, same, timeOrderedId, usageRowParams } from "./usage-rows.ts";

// Settlement runs for every call the data planes serve, so it is plain SQL over arrays (unnest) rather than
// Prisma: building and interpreting Prisma's queries cost about a millisecond of control-plane CPU per event,
// which capped settlement below the data plane's throughput. The schema is Prisma's (see prisma/).

const INSERT_USAGE = insertUsageSql("usage_logs");
// The log is partitioned by day on started_at, so the request id is unique together with started_at: every
// event of a call carries the started_at the data plane fixed when the call started, so a redelivery still
// conflicts with the row already there. This is what settles a call exactly once: the batch's debits and ledger
// lines are made from the rows this statement returns, in the same transaction (see also OLD_LOG_HOLDS).

// While an unpartitioned log from before the partitions is being copied across (usage/backfill.ts), a call's row
// may still be there, where the INSERT above cannot conflict with it: a batch holding such a call (a replay, an
// exact count for an estimate) is refused and retried until the copy has moved the row (the move is one
// transaction, so the row is always in one of the two tables). Once the old table is gone it never comes back, so
// a database where it was seen absent is not asked again.
const OLD_LOG_EXISTS = `SELECT to_regclass('usage_logs_unpartitioned') IS NOT NULL AS present`;
const OLD_LOG_HOLDS = `SELECT count(*)::int AS n FROM usage_logs_unpartitioned WHERE request_id = ANY($1::text[])`;
const withoutOldLog = new WeakSet<Database>();

// An exact count replacing an estimated row (a stream the client cut, whose upstream finished afterwards):
// only a row still estimated is changed, so the replacement happens once, whoever delivers it and how often.
// It returns the old cost and token counts, for the difference to settle and to roll up. $15 and $16 bound the
// calls' start times (the rows' started_at): planned with them, the statement reads and plans only the partitions
// of those days, where without them its planning alone grew with the number of day partitions (about 2 ms with
// five; a year's retention keeps hundreds).
const REPLACE_ESTIMATE = `
WITH n AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[],
    $9::bigint[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[])
    AS n(request_id, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, input_tokens,
         cache_write_5m_tokens, cache_write_1h_tokens, cost_micro, input_price, cached_input_price,
         cache_write_5m_price, cache_write_1h_price, output_price)
), old AS (
  SELECT l.id, l.started_at, l.cost_micro, l.prompt_tokens, l.completion_tokens, l.reasoning_tokens, l.cached_tokens
  FROM usage_logs l JOIN n ON n.request_id = l.request_id
  WHERE l.estimated AND l.started_at BETWEEN $15::timestamptz AND $16::timestamptz
  ORDER BY l.id
  FOR UPDATE OF l
)
UPDATE usage_logs u SET prompt_tokens = n.prompt_tokens, completion_tokens = n.completion_tokens,
  reasoning_tokens = n.reasoning_tokens, cached_tokens = n.cached_tokens, input_tokens = n.input_tokens,
  cache_write_5m_tokens = n.cache_write_5m_tokens, cache_write_1h_tokens = n.cache_write_1h_tokens,
  cost_micro = n.cost_micro, input_price = n.input_price, cached_input_price = n.cached_input_price,
  cache_write_5m_price = n.cache_write_5m_price, cache_write_1h_price = n.cache_write_1h_price,
  output_price = n.output_price, estimated = false
FROM n, old
WHERE u.started_at = old.started_at AND u.id = old.id AND n.request_id = u.request_id
  AND u.started_at BETWEEN $15::timestamptz AND $16::timestamptz
RETURNING u.request_id, u.account_id::text AS account_id, u.api_key_id::text AS api_key_id, u.model, u.upstream,
  u.started_at, u.batch_id::text AS batch_id,
  (u.cost_micro - old.cost_micro)::text AS cost_delta,
  u.prompt_tokens - old.prompt_tokens AS prompt_delta, u.completion_tokens - old.completion_tokens AS completion_delta,
  u.reasoning_tokens - old.reasoning_tokens AS reasoning_delta, u.cached_tokens - old.cached_tokens AS cached_delta`;

// The hourly rollups follow inserts by trigger; a replaced estimate adds its difference to both here.
const ROLLUP_DELTA = `
WITH customer AS (
  UPDATE usage_hourly SET prompt_tokens = prompt_tokens + $5::bigint, completion_tokens = completion_tokens + $6::bigint,
    reasoning_tokens = reasoning_tokens + $7::bigint, cached_tokens = cached_tokens + $8::bigint,
    cost_micro = cost_micro + $9::bigint
  WHERE account_id = $1::uuid AND hour = date_trunc('hour', $2::timestamptz)
    AND api_key_id = COALESCE($3::uuid, '00000000-0000-0000-0000-000000000000'::uuid) AND model = $4
  RETURNING 1
), operator AS (
  UPDATE usage_operator_hourly SET prompt_tokens = prompt_tokens + $5::bigint,
    completion_tokens = completion_tokens + $6::bigint, reasoning_tokens = reasoning_tokens + $7::bigint,
    cached_tokens = cached_tokens + $8::bigint, cost_micro = cost_micro + $9::bigint
  WHERE hour = date_trunc('hour', $2::timestamptz) AND account_id = $1::uuid AND model = $4
    AND upstream = COALESCE($10::text, '')
  RETURNING 1
)
UPDATE usage_operator_daily SET prompt_tokens = prompt_tokens + $5::bigint,
  completion_tokens = completion_tokens + $6::bigint, reasoning_tokens = reasoning_tokens + $7::bigint,
  cached_tokens = cached_tokens + $8::bigint, cost_micro = cost_micro + $9::bigint
WHERE day = date_trunc('day', $2::timestamptz, 'UTC') AND account_id = $1::uuid AND model = $4
  AND upstream = COALESCE($10::text, '')`;

// The batch's debits, one statement for all its accounts (a statement fires the accounts' policy-feed trigger
// once). The rows are locked first, in id order (FOR NO KEY UPDATE, the lock an UPDATE takes: it does not wait
// for the key-share locks that foreign keys to the account hold), so concurrent settlers cannot deadlock.
const DEBIT_ACCOUNTS = `
WITH d AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS d(id, total, n)
), locked AS (
  SELECT a.id FROM accounts a JOIN d ON d.id = a.id ORDER BY a.id FOR NO KEY UPDATE OF a
)
UPDATE accounts a SET balance_micro = a.balance_micro - d.total, spent_micro = a.spent_micro + d.total,
  updated_at = CURRENT_TIMESTAMP
FROM d, locked
WHERE a.id = locked.id AND d.id = a.id
RETURNING d.n::int AS n, a.balance_micro::text AS balance, a.time_zone`;

// The batch's ledger lines: per account, one "usage" line (its new calls: how many, their summed cost, the batch
// id that is on their rows) and one "correction" line per batch whose estimates an exact count replaced (the
// differences summed, with that batch's id), so that a batch's lines for an account always sum to minus its
// rows' cost_micro. Written once because they are made from the rows this transaction inserted or replaced.
const INSERT_LEDGER = `
INSERT INTO ledger_entries (id, account_id, kind, amount_micro, balance_after_micro, batch_id, calls)
SELECT u.id, u.account_id, u.kind::"LedgerKind", u.amount, u.balance_after, u.batch_id, u.calls
FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::uuid[], $5::int[], $6::text[], $7::uuid[])
  AS u(account_id, amount, balance_after, batch_id, calls, kind, id)`;

// The batch's key spend, one statement for all its keys (one firing of the keys' policy-feed trigger), locked in
// id order as the accounts are. A key deleted meanwhile is simply not there.
const UPDATE_KEYS = `
WITH k AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[]) AS k(id, cost, last)
), locked AS (
  SELECT a.id FROM api_keys a JOIN k ON k.id = a.id ORDER BY a.id FOR NO KEY UPDATE OF a
)
UPDATE api_keys a SET spent_micro = a.spent_micro + k.cost, last_used_at = GREATEST(a.last_used_at, k.last),
  updated_at = CURRENT_TIMESTAMP
FROM k, locked
WHERE a.id = locked.id AND k.id = a.id`;

// Settled spend per calendar period, for budgets (see addPeriodSpend).
const ADD_PERIODS = `
INSERT INTO spend_periods AS s (account_id, key_id, period, period_start, spent_micro)
SELECT u.account_id, u.key_id, u.period::"BudgetPeriod", u.period_start, u.spent
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[]) AS u(account_id, key_id, period, period_start, spent)
ON CONFLICT (account_id, key_id, period, period_start) DO UPDATE SET spent_micro = s.spent_micro + EXCLUDED.spent_micro`;

/** One amount to settle: a new call's cost, or the difference an exact count makes to an estimate. */
interface Charge {
  accountId: string;
  keyId: string | null;
  /** the batch on the call's usage row (null: a row settled before rows carried one) */
  batchId: string | null;
  cost: bigint;
  /** when the call started: its budget periods */
  startedAt: string;
  /** the same in epoch milliseconds (NaN when unreadable, as Date.parse has it) */
  startedMs: number;
  /** a difference settled later: a correction line in the ledger, and it does not move the key's last use */
  correction: boolean;
}

/** One ledger line being made: an account's usage or correction line for one batch. */
interface Line {
  kind: "usage" | "correction";
  batchId: string | null;
  calls: number;
  amount: bigint;
}

/** Of two events for one request, the one that settles: an exact count wins over an estimate. */
function pick(a: UsageEvent | undefined, b: UsageEvent): UsageEvent {
  if (a === undefined) return b;
  return a.estimated && !b.estimated ? b : a;
}

const EPOCH = new Date(0).toISOString();

/**
 * The earliest and latest start of the events, a millisecond wider on each side (the log keeps milliseconds,
 * rounded); the whole range when one is unreadable here.
 */
function startBounds(events: readonly UsageEvent[]): [string, string] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const e of events) {
    const t = Date.parse(e.startedAt);
    if (Number.isNaN(t)) return ["-infinity", "infinity"];
    lo = Math.min(lo, t);
    hi = Math.max(hi, t);
  }
  return [new Date(lo - 1).toISOString(), new Date(hi + 1).toISOString()];
}

/**
 * Settles usage events: the usage-log rows, the wallet debits, the ledger lines and the keys' spend, all in
 * one transaction keyed by request id. An event whose row exists already (a redelivery, a replay from a
 * data plane's spool) changes nothing, so nothing is ever charged twice, with one exception: an exact event
 * for a row still flagged estimated replaces its counts and settles the difference, once. The batch gets an id
 * (time-ordered), written on each of its rows and on its ledger lines: one line per account, not per call. A
 * batch costs one transaction of seven statements (usage rows, their rollups, debits, ledger lines, key spend,
 * period spend, commit) however many events, accounts and keys it holds, plus one for the rows that may exist
 * already and two per replaced estimate (and, while an old unpartitioned log is being copied, a look-up there:
 * OLD_LOG_HOLDS). The rows go straight into their day partitions (partition-write.ts); when that fails (a row
 * existed after all) the transaction is rolled back and the batch settled again through the partitioned table,
 * whose triggers add the rollups. Returns how many events were new.
 *
 * The statements are prepared (parsed and planned once per connection): at a steady trickle a batch holds a few
 * dozen events, and parsing and planning five statements cost Postgres as much as writing the rows did.
 */
export async function settleUsageBatch(
  db: Database,
  events: UsageEvent[],
  calendar: BudgetCalendar = controlCalendar,
): Promise<number> {
  const byRequest = new Map<string, UsageEvent>();
  for (const e of events) {
    const kept = byRequest.get(e.requestId);
    const picked = pick(kept, e);
    // one of the two marked as maybe settled: so is the one that settles
    byRequest.set(
      e.requestId,
      kept && (kept.maybeSettled || e.maybeSettled) ? { ...picked, maybeSettled: true } : picked,
    );
  }
  const unique = [...byRequest.values()];
  if (unique.length === 0) return 0;
  try {
    return await db.sql.transaction((tx) => settleInTransaction(db, tx, unique, calendar, true));
  } catch (err) {
    if (!(err instanceof PartitionWriteFailed)) throw err;
    // Rolled back: settled again through the partitioned table, which skips the rows that exist.
    forgetPartitions(db);
    return db.sql.transaction((tx) => settleInTransaction(db, tx, unique, calendar, false));
  }
}

async function settleInTransaction(
  db: Database,
  tx: SqlTx,
  unique: UsageEvent[],
  calendar: BudgetCalendar,
  intoPartitions: boolean,
): Promise<number> {
  const col = pgArray<UsageEvent>;
  const batchId = timeOrderedId();
  if (!withoutOldLog.has(db)) {
    const [old] = await tx.query<{ present: boolean }>(OLD_LOG_EXISTS);
    if (!old?.present) withoutOldLog.add(db);
    else {
      const [held] = await tx.query<{ n: number }>(OLD_LOG_HOLDS, [col(unique, (e) => e.requestId)]);
      if (held && held.n > 0)
        throw new Error(
          `settlement: ${held.n} of the batch's calls are still in the usage log being copied into partitions; retried once moved`,
        );
    }
  }
  // Into the day partitions (COPY for the events that cannot have a row yet) where Postgres takes COPY; else, or
  // for a row with no day partition, or after that failed, through the partitioned table and its triggers.
  let settled =
    intoPartitions && tx.copyIn ? await writeIntoPartitions(db, { ...tx, copyIn: tx.copyIn }, unique, batchId) : null;
  if (settled === null) {
    const inserted = await tx.query<{ request_id: string }>(INSERT_USAGE, usageRowParams(unique, batchId), true);
    const isNew = new Set(inserted.map((r) => r.request_id));
    settled = unique.filter((e) => isNew.has(e.requestId));
  }
  const fresh = new Set(settled.map((e) => e.requestId));
  const charges: Charge[] = settled.map((e) => ({
    accountId: e.accountId,
    keyId: e.keyId,
    batchId,
    cost: BigInt(e.cost),
    startedAt: e.startedAt,
    startedMs: Date.parse(e.startedAt),
    correction: false,
  }));
  // the calls each account's usage line counts: all its new rows, free ones too (the rows with this batch id)
  const calls = new Map<string, number>();
  for (const e of settled) calls.set(e.accountId, (calls.get(e.accountId) ?? 0) + 1);

  const exact = unique.filter((e) => !fresh.has(e.requestId) && !e.estimated);
  if (exact.length > 0) {
    // Not prepared: a generic plan of an UPDATE on the partitioned log opens every partition (bench:settle: the
    // replacements cost 4x as much Postgres CPU prepared), where a custom plan prunes to the few concerned.
    const replaced = await tx.query<{
      request_id: string;
      account_id: string;
      api_key_id: string | null;
      model: string;
      upstream: string | null;
      started_at: Date | string;
      batch_id: string | null;
      cost_delta: string;
      prompt_delta: number;
      completion_delta: number;
      reasoning_delta: number;
      cached_delta: number;
    }>(REPLACE_ESTIMATE, [
      col(exact, (e) => e.requestId),
      col(exact, (e) => e.promptTokens),
      col(exact, (e) => e.completionTokens),
      col(exact, (e) => e.reasoningTokens),
      col(exact, (e) => e.cachedTokens),
      col(exact, inputOf),
      col(exact, (e) => e.cacheWrite5mTokens),
      col(exact, (e) => e.cacheWrite1hTokens),
      col(exact, (e) => e.cost),
      col(exact, (e) => e.prices?.input ?? null),
      col(exact, (e) => e.prices?.cachedInput ?? null),
      col(exact, (e) => e.prices?.cacheWrite5m ?? null),
      col(exact, (e) => e.prices?.cacheWrite1h ?? null),
      col(exact, (e) => e.prices?.output ?? null),
      ...startBounds(exact),
    ]);
    for (const r of replaced) {
      const delta = BigInt(r.cost_delta);
      await tx.query(
        ROLLUP_DELTA,
        [
          r.account_id,
          r.started_at,
          r.api_key_id,
          r.model,
          r.prompt_delta,
          r.completion_delta,
          r.reasoning_delta,
          r.cached_delta,
          r.cost_delta,
          r.upstream,
        ],
        true,
      );
      if (delta === 0n) continue;
      const startedAt = new Date(r.started_at);
      charges.push({
        accountId: r.account_id,
        keyId: r.api_key_id,
        batchId: r.batch_id,
        cost: delta,
        startedAt: startedAt.toISOString(),
        startedMs: startedAt.getTime(),
        correction: true,
      });
    }
  }

  // Per account: one debit for the batch; its ledger lines with their running balance.
  const byAccount = new Map<string, Charge[]>();
  for (const c of charges) {
    if (c.cost === 0n) continue;
    const list = byAccount.get(c.accountId);
    if (list) list.push(c);
    else byAccount.set(c.accountId, [c]);
  }
  // Sorted ids: concurrent settlers lock rows in the same order, so they cannot deadlock.
  const accountIds = [...byAccount.keys()].sort();
  const timeZones = new Map<string, string>();
  if (accountIds.length > 0) {
    const totals = accountIds.map((id) => byAccount.get(id)!.reduce((s, c) => s + c.cost, 0n));
    const debited = await tx.query<{ n: number; balance: string; time_zone: string }>(
      DEBIT_ACCOUNTS,
      [pgArray(accountIds, same), pgArray(totals, same)],
      true,
    );
    const byPosition = new Map(debited.map((r) => [r.n - 1, r]));
    const ledger: (Line & { account: string; after: bigint })[] = [];
    accountIds.forEach((accountId, i) => {
      const row = byPosition.get(i);
      if (row === undefined) throw new Error(`settlement: account ${accountId} does not exist`);
      timeZones.set(accountId, row.time_zone);
      let balance = BigInt(row.balance) + totals[i]!;
      for (const line of ledgerLines(byAccount.get(accountId)!, calls.get(accountId) ?? 0)) {
        balance -= line.amount;
        ledger.push({ ...line, account: accountId, amount: -line.amount, after: balance });
      }
    });
    const now = Date.now();
    await tx.query(
      INSERT_LEDGER,
      [
        pgArray(ledger, (l) => l.account),
        pgArray(ledger, (l) => l.amount),
        pgArray(ledger, (l) => l.after),
        pgArray(ledger, (l) => l.batchId),
        pgArray(ledger, (l) => l.calls),
        pgArray(ledger, (l) => l.kind),
        pgArray(ledger, () => timeOrderedId(now)),
      ],
      true,
    );
  }

  const byKey = new Map<string, { cost: bigint; last: string; lastMs: number }>();
  for (const c of charges) {
    if (c.keyId === null) continue;
    // The key's last use is not moved by a correction: the call's own row already did.
    const last = c.correction ? EPOCH : c.startedAt;
    const lastMs = c.correction ? 0 : c.startedMs;
    const k = byKey.get(c.keyId);
    if (k) {
      k.cost += c.cost;
      if (lastMs > k.lastMs) {
        k.last = last;
        k.lastMs = lastMs;
      }
    } else byKey.set(c.keyId, { cost: c.cost, last, lastMs });
  }
  const keyIds = [...byKey.keys()].sort();
  if (keyIds.length > 0) {
    await tx.query(
      UPDATE_KEYS,
      [
        pgArray(keyIds, same),
        pgArray(keyIds, (id) => byKey.get(id)!.cost),
        pgArray(keyIds, (id) => byKey.get(id)!.last),
      ],
      true,
    );
  }
  await addPeriodSpend(tx, byAccount, timeZones, calendar);
  return settled.length;
}

/**
 * One account's ledger lines for a batch, their amounts as charged (positive debits): the new calls' costs as
 * one usage line (calls: all the account's new rows, free ones included), then the corrections' differences
 * summed per batch of the rows they replaced (calls: the rows replaced).
 */
function ledgerLines(charges: Charge[], newCalls: number): Line[] {
  const lines = new Map<string, Line>();
  for (const c of charges) {
    const kind = c.correction ? "correction" : "usage";
    const id = `${kind}:${c.batchId ?? ""}`;
    const line = lines.get(id);
    if (line) {
      line.amount += c.cost;
      if (c.correction) line.calls++;
    } else lines.set(id, { kind, batchId: c.batchId, calls: c.correction ? 1 : newCalls, amount: c.cost });
  }
  return [...lines.values()];
}

/**
 * Adds the batch's charges to the settled spend of their calendar periods (day, ISO week, month in the account's
 * time zone), for the account as a whole and for each key: one statement for the batch. A call belongs to the
 * period in which it started. Rows are written in key order so concurrent settlers cannot deadlock.
 */
async function addPeriodSpend(
  tx: SqlTx,
  byAccount: Map<string, Charge[]>,
  timeZones: Map<string, string>,
  calendar: BudgetCalendar,
): Promise<void> {
  // This runs for every settled call, so per call it does three cached period look-ups and adds its cost once
  // for the account and once for its key, to the sum of the calls that started in the same three periods (a
  // batch's calls mostly did); the rows are made from those few sums. The test clock's offset is one number for
  // the whole batch.
  const shift = calendar.fromWall(0);
  const sums = new Map<string, { micro: bigint; row: [string, string, string, number] }>();
  const add = (accountId: string, subject: string, period: string, start: number, cost: bigint) => {
    const id = `${accountId}\t${subject}\t${period}\t${start}`;
    const s = sums.get(id);
    if (s) s.micro += cost;
    else sums.set(id, { micro: cost, row: [accountId, subject, period, start] });
  };
  for (const [accountId, charges] of byAccount) {
    const tz = timeZones.get(accountId) ?? "UTC";
    // per subject ("" the account, else a key id): its sums, one per distinct set of period starts
    const bySubject = new Map<string, { starts: number[]; micro: bigint }[]>();
    const addTo = (subject: string, starts: number[], cost: bigint) => {
      let list = bySubject.get(subject);
      if (list === undefined) bySubject.set(subject, (list = []));
      next: for (const s of list) {
        for (let i = 0; i < starts.length; i++) if (s.starts[i] !== starts[i]) continue next;
        s.micro += cost;
        return;
      }
      list.push({ starts, micro: cost });
    };
    for (const e of charges) {
      const t = e.startedMs + shift;
      const starts = budgetPeriods.map((period) => calendar.bounds(tz, period, t).start);
      addTo("", starts, e.cost);
      if (e.keyId !== null) addTo(e.keyId, starts, e.cost);
    }
    for (const [subject, list] of bySubject)
      for (const { starts, micro } of list)
        budgetPeriods.forEach((period, i) => add(accountId, subject, period, starts[i]!, micro));
  }
  if (sums.size === 0) return;
  const rows = [...sums.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, { micro, row }]) => [row[0], row[1], row[2], new Date(row[3]).toISOString(), micro.toString()]);
  await tx.query(
    ADD_PERIODS,
    [0, 1, 2, 3, 4].map((i) => pgArray(rows, (r) => r[i])),
    true,
  );
}
