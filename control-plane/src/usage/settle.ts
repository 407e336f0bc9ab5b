import { type BudgetCalendar, budgetPeriods, type UsageEvent } from "@modelgate/data-plane";
import { controlCalendar } from "../budgets/calendar.ts";
import type { Database, SqlTx } from "../db/client.ts";

// Settlement runs for every call the data planes serve, so it is plain SQL over arrays (unnest) rather than
// Prisma: building and interpreting Prisma's queries cost about a millisecond of control-plane CPU per event,
// which capped settlement below the data plane's throughput. The schema is Prisma's (see prisma/).

const INSERT_USAGE = `
INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, upstream, status, error_code,
  prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, ttft_ms, stream,
  client_ip, started_at)
SELECT gen_random_uuid(), u.* FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[],
  $7::int[], $8::text[], $9::int[], $10::int[], $11::int[], $12::int[], $13::bigint[], $14::int[], $15::int[],
  $16::bool[], $17::text[], $18::timestamptz[]) AS u
ON CONFLICT (request_id) DO NOTHING
RETURNING request_id`;

const DEBIT_ACCOUNT = `
UPDATE accounts SET balance_micro = balance_micro - $2::bigint, spent_micro = spent_micro + $2::bigint,
  updated_at = CURRENT_TIMESTAMP
WHERE id = $1::uuid
RETURNING balance_micro::text AS balance, time_zone`;

const INSERT_LEDGER = `
INSERT INTO ledger_entries (id, account_id, kind, amount_micro, balance_after_micro, api_key_id, request_id)
SELECT gen_random_uuid(), $1::uuid, 'charge', u.amount, u.balance_after, u.api_key_id, u.request_id
FROM unnest($2::bigint[], $3::bigint[], $4::uuid[], $5::text[]) AS u(amount, balance_after, api_key_id, request_id)`;

const UPDATE_KEY = `
UPDATE api_keys SET spent_micro = spent_micro + $2::bigint, last_used_at = GREATEST(last_used_at, $3::timestamptz),
  updated_at = CURRENT_TIMESTAMP
WHERE id = $1::uuid`;

// Settled spend per calendar period, for budgets (see addPeriodSpend).
const ADD_PERIODS = `
INSERT INTO spend_periods AS s (account_id, key_id, period, period_start, spent_micro)
SELECT u.account_id, u.key_id, u.period::"BudgetPeriod", u.period_start, u.spent
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[]) AS u(account_id, key_id, period, period_start, spent)
ON CONFLICT (account_id, key_id, period, period_start) DO UPDATE SET spent_micro = s.spent_micro + EXCLUDED.spent_micro`;

/**
 * Settles usage events: the usage-log rows, the wallet debits, the ledger entries and the keys' spend, all in
 * one transaction keyed by request id. An event whose row exists already (a redelivery, a replay from a
 * data plane's spool) changes nothing, so nothing is ever charged twice. A batch costs one transaction and
 * one UPDATE per account and per key, however many events it holds. Returns how many events were new.
 */
export async function settleUsageBatch(db: Database, events: UsageEvent[], calendar: BudgetCalendar = controlCalendar): Promise<number> {
  const unique = [...new Map(events.map((e) => [e.requestId, e])).values()];
  if (unique.length === 0) return 0;
  const col = <T>(f: (e: UsageEvent) => T): T[] => unique.map(f);
  return db.sql.transaction(async (tx) => {
    const inserted = await tx.query<{ request_id: string }>(INSERT_USAGE, [
      col((e) => e.requestId),
      col((e) => e.accountId),
      col((e) => e.keyId),
      col((e) => e.model),
      col((e) => e.protocol),
      col((e) => e.upstream),
      col((e) => e.status),
      col((e) => e.errorCode),
      col((e) => e.promptTokens),
      col((e) => e.completionTokens),
      col((e) => e.reasoningTokens),
      col((e) => e.cachedTokens),
      col((e) => e.cost),
      col((e) => e.latencyMs),
      col((e) => e.ttftMs),
      col((e) => e.stream),
      col((e) => e.clientIp),
      col((e) => e.startedAt),
    ]);
    const fresh = new Set(inserted.map((r) => r.request_id));
    const settled = unique.filter((e) => fresh.has(e.requestId));

    // Per account: one debit for the batch, one ledger row per charged call with its running balance.
    const byAccount = new Map<string, UsageEvent[]>();
    for (const e of settled) {
      if (BigInt(e.cost) === 0n) continue;
      const list = byAccount.get(e.accountId);
      if (list) list.push(e);
      else byAccount.set(e.accountId, [e]);
    }
    // Sorted ids: concurrent settlers lock rows in the same order, so they cannot deadlock.
    const timeZones = new Map<string, string>();
    for (const accountId of [...byAccount.keys()].sort()) {
      const charges = byAccount.get(accountId)!;
      const total = charges.reduce((s, e) => s + BigInt(e.cost), 0n);
      const [row] = await tx.query<{ balance: string; time_zone: string }>(DEBIT_ACCOUNT, [accountId, total.toString()]);
      if (row === undefined) throw new Error(`settlement: account ${accountId} does not exist`);
      timeZones.set(accountId, row.time_zone);
      let balance = BigInt(row.balance) + total;
      const amounts: string[] = [];
      const after: string[] = [];
      for (const e of charges) {
        const cost = BigInt(e.cost);
        balance -= cost;
        amounts.push((-cost).toString());
        after.push(balance.toString());
      }
      await tx.query(INSERT_LEDGER, [accountId, amounts, after, charges.map((e) => e.keyId), charges.map((e) => e.requestId)]);
    }

    const byKey = new Map<string, { cost: bigint; last: string }>();
    for (const e of settled) {
      const k = byKey.get(e.keyId);
      if (k) {
        k.cost += BigInt(e.cost);
        if (Date.parse(e.startedAt) > Date.parse(k.last)) k.last = e.startedAt;
      } else byKey.set(e.keyId, { cost: BigInt(e.cost), last: e.startedAt });
    }
    for (const keyId of [...byKey.keys()].sort()) {
      const k = byKey.get(keyId)!;
      await tx.query(UPDATE_KEY, [keyId, k.cost.toString(), k.last]);
    }
    await addPeriodSpend(tx, byAccount, timeZones, calendar);
    return settled.length;
  });
}


/**
 * Adds the batch's charges to the settled spend of their calendar periods (day, ISO week, month in the account's
 * time zone), for the account as a whole and for each key: one statement for the batch. A call belongs to the
 * period in which it started. Rows are written in key order so concurrent settlers cannot deadlock.
 */
async function addPeriodSpend(
  tx: SqlTx,
  byAccount: Map<string, UsageEvent[]>,
  timeZones: Map<string, string>,
  calendar: BudgetCalendar,
): Promise<void> {
  const sums = new Map<string, bigint>();
  for (const [accountId, charges] of byAccount) {
    const tz = timeZones.get(accountId) ?? "UTC";
    for (const e of charges) {
      const t = calendar.fromWall(Date.parse(e.startedAt));
      for (const period of budgetPeriods) {
        const start = new Date(calendar.bounds(tz, period, t).start).toISOString();
        for (const subject of ["", e.keyId]) {
          const id = `${accountId}\t${subject}\t${period}\t${start}`;
          sums.set(id, (sums.get(id) ?? 0n) + BigInt(e.cost));
        }
      }
    }
  }
  if (sums.size === 0) return;
  const rows = [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, micro]) => [...id.split("\t"), micro.toString()]);
  await tx.query(ADD_PERIODS, [0, 1, 2, 3, 4].map((i) => rows.map((r) => r[i])));
}
