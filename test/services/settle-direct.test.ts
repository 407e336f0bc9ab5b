import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import type { Database, SqlTx } from "../../control-plane/src/db/client.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { usageEvent } from "../helpers/usage-event.ts";

// Settlement writes a batch's rows straight into their day partitions (COPY for events that cannot have a row yet,
// INSERT … ON CONFLICT for those marked maybeSettled) and adds the rollups itself; through the partitioned table,
// the log's triggers add them. Both ways must leave the same log, rollups, wallets, keys, periods and ledger: the
// same batches are settled into two databases, one of them only ever through the partitioned table.

type Fx = Awaited<ReturnType<typeof freshDatabase>>;
let direct: Fx;
let viaTable: Fx;
beforeAll(async () => {
  [direct, viaTable] = await Promise.all([freshDatabase("direct"), freshDatabase("viatable")]);
}, 60_000);
afterAll(async () => {
  await Promise.all([direct?.drop(), viaTable?.drop()]);
});

/** The database as settlement sees it, but without COPY: every batch goes through the partitioned table. */
const withoutCopy = (db: Database): Database => ({
  ...db,
  sql: {
    ...db.sql,
    transaction: (fn) => db.sql.transaction((tx) => fn({ exec: tx.exec, query: tx.query })),
  },
});

/** The database, recording the statements settlement runs (their first words) and the transactions. */
function recording(db: Database): { db: Database; log: string[] } {
  const log: string[] = [];
  const head = (sql: string) => sql.trim().split(/\s+/).slice(0, 3).join(" ");
  return {
    log,
    db: {
      ...db,
      sql: {
        ...db.sql,
        transaction: (fn) => {
          log.push("BEGIN");
          return db.sql.transaction((tx) => {
            const wrapped: SqlTx = {
              exec: (s) => (log.push(head(s)), tx.exec(s)),
              query: (s, p, prepared) => (log.push(head(s)), tx.query(s, p, prepared)),
              copyIn: (s, data) => (log.push(head(s)), tx.copyIn!(s, data)),
            };
            return fn(wrapped);
          });
        },
      },
    },
  };
}

const DAY = 86_400_000;
const todayStart = () => Math.floor(Date.now() / DAY) * DAY;
const partitionOf = (t: number) => `usage_logs_p${new Date(t).toISOString().slice(0, 10).replace(/-/g, "")}`;

const ACCOUNTS = [randomUUID(), randomUUID()];
const KEYS = [randomUUID(), randomUUID(), randomUUID()];
async function seed(fx: Fx) {
  for (const [i, id] of ACCOUNTS.entries())
    await fx.db.prisma.account.create({ data: { id, name: `a${i}-${id}`, balanceMicro: 1_000_000_000n } as never });
  for (const [i, id] of KEYS.entries())
    await fx.db.prisma.apiKey.create({
      data: { id, accountId: ACCOUNTS[i % 2]!, name: `k${i}`, keyHash: randomUUID(), prefix: "sk-test" } as never,
    });
}

const event = (over: Partial<UsageEvent> & Pick<UsageEvent, "startedAt">): UsageEvent => ({
  ...usageEvent(0),
  requestId: `req_${randomUUID()}`,
  keyId: KEYS[0]!,
  accountId: ACCOUNTS[0]!,
  promptTokens: 10,
  completionTokens: 20,
  cost: "100",
  ...over,
});

/** What both ways must agree on: every table settlement writes, without the ids and times each run makes. */
async function state(fx: Fx) {
  const q = <R>(sql: string) => fx.db.sql.transaction((tx) => tx.query<R>(sql));
  const figures = `requests::text, errors::text, prompt_tokens::text, completion_tokens::text,
    reasoning_tokens::text, cached_tokens::text, cost_micro::text`;
  return {
    log: await q(`SELECT request_id, account_id, api_key_id, model, protocol, upstream, status, error_code,
        prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, input_tokens, cache_write_5m_tokens,
        cache_write_1h_tokens, cost_micro::text, input_price::text, output_price::text, estimated, end_user, tags,
        dropped, latency_ms, ttft_ms, stream, client_ip, started_at
      FROM usage_logs ORDER BY request_id`),
    hourly: await q(`SELECT account_id, hour, api_key_id, model, ${figures} FROM usage_hourly ORDER BY 1, 2, 3, 4`),
    operatorHourly: await q(
      `SELECT hour, account_id, model, upstream, ${figures} FROM usage_operator_hourly ORDER BY 1, 2, 3, 4`,
    ),
    operatorDaily: await q(
      `SELECT day, account_id, model, upstream, ${figures} FROM usage_operator_daily ORDER BY 1, 2, 3, 4`,
    ),
    endUsers: await q(
      `SELECT account_id, dimension, day, value, ${figures} FROM usage_attribution_daily ORDER BY 1, 2, 3, 4`,
    ),
    tags: await q(
      `SELECT account_id, tag, hour, api_key_id, model, ${figures} FROM usage_tag_hourly ORDER BY 1, 2, 3, 4, 5`,
    ),
    accounts: await q(`SELECT id, balance_micro::text, spent_micro::text FROM accounts ORDER BY id`),
    keys: await q(`SELECT id, spent_micro::text, last_used_at FROM api_keys ORDER BY id`),
    periods: await q(
      `SELECT account_id, key_id, period, period_start, spent_micro::text FROM spend_periods ORDER BY 1, 2, 3, 4`,
    ),
    ledger: await q(`SELECT account_id, kind, sum(amount_micro)::text AS amount, sum(calls)::int AS calls
      FROM ledger_entries GROUP BY 1, 2 ORDER BY 1, 2`),
  };
}

describe("settlement into the day partitions", () => {
  beforeAll(async () => {
    await Promise.all([seed(direct), seed(viaTable)]);
  });

  it("leaves the log, rollups, wallets, keys, periods and ledger as settling through the partitioned table does", async () => {
    const settledBefore: UsageEvent[] = [];
    // times around today's hours and the midnight into tomorrow (both days have partitions), and a day years
    // before the partitions (the default partition)
    const start = todayStart();
    const time = fc.oneof(
      fc.integer({ min: 0, max: 26 * 60 * 60 - 1 }).map((s) => start + s * 1000 + 999),
      fc.integer({ min: -2000, max: 2000 }).map((ms) => start + DAY + ms),
    );
    const text = fc.constantFrom("m", "m-2", 'q"uote', "back\\slash", "tab\there", "{a,b}", "ünï");
    const fresh = fc.record({
      account: fc.nat(1),
      key: fc.nat(2),
      model: text,
      upstream: fc.option(text, { nil: null }),
      status: fc.constantFrom(200, 200, 200, 429, 502),
      prompt: fc.nat(5000),
      completion: fc.nat(2000),
      reasoning: fc.nat(100),
      cached: fc.nat(100),
      cost: fc.bigInt({ min: 0n, max: 10n ** 12n }),
      t: time,
      endUser: fc.option(fc.constantFrom("u1", "u2", "tab\tuser"), { nil: null }),
      tags: fc.array(fc.constantFrom("team=a", "env=prod", "canary", 'q"'), { maxLength: 3 }),
      estimated: fc.boolean(),
      marked: fc.boolean(),
    });
    // a batch: new events (some marked maybeSettled though new), and events settled before sent again, marked
    // or not (unmarked, the write into the partition fails and the batch is settled again the checked way), some
    // of them an estimate's exact count
    const batch = fc.record({
      fresh: fc.array(fresh, { minLength: 1, maxLength: 40 }),
      again: fc.array(fc.record({ pick: fc.nat(), marked: fc.boolean(), exact: fc.boolean() }), { maxLength: 4 }),
      // one batch in five has a call of a day before the partitions: the whole batch goes through the table
      oldDay: fc.nat(4).map((n) => n === 0),
    });
    await fc.assert(
      fc.asyncProperty(batch, async (b) => {
        const events: UsageEvent[] = b.fresh.map((f) =>
          event({
            accountId: ACCOUNTS[f.account]!,
            keyId: KEYS[f.account === 0 ? (f.key % 2) * 2 : 1]!,
            model: f.model,
            upstream: f.upstream,
            status: f.status,
            errorCode: f.status === 200 ? null : "err",
            promptTokens: f.prompt + f.cached,
            completionTokens: f.completion,
            reasoningTokens: Math.min(f.reasoning, f.completion),
            cachedTokens: f.cached,
            cost: f.status === 200 ? f.cost.toString() : "0",
            startedAt: new Date(f.t).toISOString(),
            endUser: f.endUser,
            tags: f.tags,
            estimated: f.estimated && f.status === 200,
            ...(f.marked ? { maybeSettled: true } : {}),
          }),
        );
        if (b.oldDay) events[0] = { ...events[0]!, startedAt: new Date(Date.UTC(2024, 0, 1, 12)).toISOString() };
        for (const a of b.again) {
          if (settledBefore.length === 0) break;
          const old = settledBefore[a.pick % settledBefore.length]!;
          const again =
            a.exact && old.estimated ? { ...old, estimated: false, cost: String(BigInt(old.cost) + 7n) } : old;
          events.push(a.marked ? { ...again, maybeSettled: true } : { ...again, maybeSettled: undefined });
        }
        const [n1, n2] = [
          await settleUsageBatch(direct.db, events),
          await settleUsageBatch(withoutCopy(viaTable.db), events),
        ];
        expect(n1).toBe(n2);
        settledBefore.push(...events.filter((e) => !settledBefore.includes(e)));
        expect(await state(direct)).toEqual(await state(viaTable));
      }),
      { numRuns: 25 },
    );
    // the partitions were written into, and the default partition holds only the days before them
    const [where] = await direct.db.sql.transaction((tx) =>
      tx.query<{ today: number; other: number }>(
        `SELECT (SELECT count(*)::int FROM "${partitionOf(start)}") AS today,
           (SELECT count(*)::int FROM usage_logs_default WHERE started_at >= '${new Date(start).toISOString()}') AS other`,
      ),
    );
    expect(where!.today).toBeGreaterThan(0);
    expect(where!.other).toBe(0);
  }, 120_000);

  it("COPYs new events, checks marked ones, and settles a batch again the checked way when a row exists after all", async () => {
    const { db, log } = recording(direct.db);
    const t = new Date(todayStart() + 3_600_000).toISOString();
    const first = [event({ startedAt: t }), event({ startedAt: t, maybeSettled: true })];
    expect(await settleUsageBatch(db, first)).toBe(2);
    expect(log.filter((s) => /^(BEGIN|COPY|INSERT INTO "?usage_logs)/.test(s))).toEqual([
      "BEGIN",
      `INSERT INTO "${partitionOf(todayStart())}"`,
      `COPY "${partitionOf(todayStart())}" (id,`,
    ]);
    log.length = 0;
    const balance = async () =>
      (await direct.db.prisma.account.findUniqueOrThrow({ where: { id: ACCOUNTS[0]! } })).balanceMicro;
    const before = await balance();
    // both sent again unmarked, beside a new one: the COPY meets the existing rows, the batch is rolled back and
    // settled through the partitioned table, which skips them: only the new call is charged
    const next = event({ startedAt: t, cost: "5" });
    expect(await settleUsageBatch(db, [...first.map((e) => ({ ...e, maybeSettled: undefined })), next])).toBe(1);
    expect(log.filter((s) => /^(BEGIN|COPY|INSERT INTO "?usage_logs)/.test(s))).toEqual([
      "BEGIN",
      `COPY "${partitionOf(todayStart())}" (id,`,
      "BEGIN",
      "INSERT INTO usage_logs",
    ]);
    expect(await balance()).toBe(before - 5n);
    expect(
      await direct.db.prisma.usageLog.count({ where: { requestId: { in: [...first, next].map((e) => e.requestId) } } }),
    ).toBe(3);
  });

  it("writes a row whose day has no partition (any more) through the partitioned table, into the default partition", async () => {
    // a partition made for a day far ahead, written into (the settler now knows it), then dropped
    const day = todayStart() + 30 * DAY;
    const name = partitionOf(day);
    const q = (sql: string) => direct.db.sql.transaction((tx) => tx.query(sql));
    await q(`CREATE TABLE "${name}" PARTITION OF usage_logs FOR VALUES FROM ('${new Date(day).toISOString()}')
      TO ('${new Date(day + DAY).toISOString()}')`);
    // the settler's list of partitions is read again at most once a minute: a new database object reads it now
    const { db, log } = recording({ ...direct.db });
    const e1 = event({ startedAt: new Date(day + 60_000).toISOString() });
    expect(await settleUsageBatch(db, [e1])).toBe(1);
    expect(log).toContain(`COPY "${name}" (id,`);
    await q(`ALTER TABLE usage_logs DETACH PARTITION "${name}"`);
    await q(`DROP TABLE "${name}"`);
    log.length = 0;
    const e2 = event({ startedAt: new Date(day + 120_000).toISOString() });
    expect(await settleUsageBatch(db, [e2])).toBe(1);
    expect(log.filter((s) => /^(BEGIN|COPY|INSERT INTO "?usage_logs)/.test(s))).toEqual([
      "BEGIN",
      `COPY "${name}" (id,`,
      "BEGIN",
      "INSERT INTO usage_logs",
    ]);
    const rows = await direct.db.sql.transaction((tx) =>
      tx.query<{ request_id: string }>(
        `SELECT request_id FROM usage_logs_default WHERE request_id = '${e2.requestId}'`,
      ),
    );
    expect(rows).toHaveLength(1);
  });
});
