import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { operatorUsage } from "../../control-plane/src/stats/operator.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// The operators' usage across customers reads whole days from the daily rollup and the edge hours from the
// hourly one: for any span it must equal the usage log aggregated over the hours that start in the span.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse("2026-05-01T00:00:00Z");
let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext;
const q = <T>(sql: string, params: unknown[] = []) => db.db.sql.transaction((tx) => tx.query<T>(sql, params));

beforeAll(async () => {
  db = await freshDatabase("oprollup");
  ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32) };
  const accounts: string[] = [];
  for (const name of ["a", "b", "c"]) accounts.push((await db.db.prisma.account.create({ data: { name } })).id);
  // 6,000 rows over 12 days at irregular minutes, in three statements (the trigger adds each statement's rows)
  for (let part = 0; part < 3; part++)
    await q(
      `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, upstream, status, prompt_tokens, completion_tokens,
         reasoning_tokens, cached_tokens, cost_micro, latency_ms, started_at)
       SELECT gen_random_uuid(), 'r' || $2::int || '_' || i, ($1::uuid[])[i % 3 + 1], 'm-' || (i % 4), 'openai',
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'up-' || (i % 2) END, CASE WHEN i % 13 = 0 THEN 502 ELSE 200 END,
         i % 101, i % 37, i % 3, i % 7, i * 11, 5, $3::timestamptz + (i * 173 + $2::int * 61) * interval '1 second'
       FROM generate_series(1, 2000) AS i`,
      [accounts, part, new Date(T0).toISOString()],
    );
});
afterAll(async () => db?.drop());

async function fromLog(from: Date, to: Date, key: string) {
  const rows = await q<{ key: string; requests: string; errors: string; cost: string; prompt: string }>(
    `SELECT ${key} AS key, count(*)::text AS requests, count(*) FILTER (WHERE status < 200 OR status >= 300)::text AS errors,
            sum(cost_micro)::text AS cost, sum(prompt_tokens)::text AS prompt
     FROM usage_logs WHERE date_trunc('hour', started_at) >= $1 AND date_trunc('hour', started_at) < $2 GROUP BY 1 ORDER BY 1`,
    [from.toISOString(), to.toISOString()],
  );
  return rows.map((r) => ({ ...r }));
}
const shape = (list: { key: string; requests: bigint; errors: bigint; costMicro: bigint; promptTokens: bigint }[]) =>
  list
    .map((g) => ({
      key: g.key,
      requests: String(g.requests),
      errors: String(g.errors),
      cost: String(g.costMicro),
      prompt: String(g.promptTokens),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

describe("operators' usage over the daily and hourly rollups", () => {
  const spans: [string, number, number][] = [
    ["whole days", 0, 7 * DAY],
    ["ragged edges over days", 5 * HOUR + 17 * 60_000, 9 * DAY + 13 * HOUR + 5_000],
    ["within one day", 2 * DAY + 3 * HOUR, 2 * DAY + 20 * HOUR],
    ["across one midnight", 3 * DAY - 5 * HOUR, 3 * DAY + 2 * HOUR],
    ["all of it", -DAY, 14 * DAY],
  ];
  for (const [name, a, b] of spans)
    it(`equals the log over the span's hours: ${name}`, async () => {
      const from = new Date(T0 + a);
      const to = new Date(T0 + b);
      const r = await operatorUsage(ctx, from, to);
      expect(shape(r.byAccount)).toEqual(await fromLog(from, to, "account_id::text"));
      expect(shape(r.byModel)).toEqual(await fromLog(from, to, "model"));
      expect(shape(r.byUpstream)).toEqual(await fromLog(from, to, "COALESCE(upstream, '')"));
      expect(r.byAccount.reduce((n, g) => n + g.requests, 0n)).toBeGreaterThan(0n);
    });
});
