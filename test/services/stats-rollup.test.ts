import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { spendBetween, usageStats } from "../../control-plane/src/stats/aggregate.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Statistics read the hourly rollup for whole hours and the log for the edges; they must equal an
// aggregation of the raw log over the same window, whatever the window's edges.

let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext;
let accountId: string;
let keys: string[];
const T0 = Date.parse("2026-03-01T00:00:00Z");
const q = <T>(sql: string, params: unknown[] = []) => db.db.sql.transaction((tx) => tx.query<T>(sql, params));

beforeAll(async () => {
  db = await freshDatabase("rollup");
  ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32) };
  const account = await db.db.prisma.account.create({ data: { name: "acme", balanceMicro: 10_000_000_000n } });
  accountId = account.id;
  keys = [];
  for (const name of ["a", "b"])
    keys.push(
      (
        await db.db.prisma.apiKey.create({
          data: { accountId, name, keyHash: name, prefix: name, allowedModels: [], ipAllowlist: [] },
        })
      ).id,
    );
  // 3,000 rows over ~16 hours at irregular seconds, in three statements (the trigger aggregates per statement).
  for (let part = 0; part < 3; part++) {
    await q(
      `INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, status, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, started_at)
       SELECT gen_random_uuid(), 'r' || $4::int || '_' || i, $1::uuid, CASE WHEN i % 7 = 0 THEN NULL WHEN i % 2 = 0 THEN $2::uuid ELSE $3::uuid END,
              'm-' || (i % 3), 'openai', CASE WHEN i % 11 = 0 THEN 500 ELSE 200 END, i % 97, i % 53, i % 5, i % 13, i * 3, 10,
              $5::timestamptz + (i * 59 + $4::int * 17) * interval '1 second'
       FROM generate_series(1, 1000) AS i`,
      [accountId, keys[0], keys[1], part, new Date(T0).toISOString()],
    );
  }
});
afterAll(async () => db?.drop());

async function rawTotals(from: Date, to: Date, model?: string) {
  const [r] = await q<Record<string, string>>(
    `SELECT count(*)::text AS requests, count(*) FILTER (WHERE status < 200 OR status >= 300)::text AS errors, coalesce(sum(prompt_tokens),0)::text AS prompt,
            coalesce(sum(completion_tokens),0)::text AS completion, coalesce(sum(cost_micro),0)::text AS cost
     FROM usage_logs WHERE account_id = $1 AND started_at >= $2 AND started_at < $3 AND ($4::text IS NULL OR model = $4)`,
    [accountId, from.toISOString(), to.toISOString(), model ?? null],
  );
  return r!;
}

describe("statistics over the hourly rollup", () => {
  const windows: [string, number, number][] = [
    ["aligned hours", 0, 48 * 3600_000],
    ["ragged edges", 17 * 60_000 + 3_000, 31 * 3600_000 + 41 * 60_000],
    ["inside one hour", 5 * 3600_000 + 60_000, 5 * 3600_000 + 50 * 60_000],
    ["crossing one boundary", 5 * 3600_000 + 50 * 60_000, 6 * 3600_000 + 10 * 60_000],
  ];
  for (const [label, a, b] of windows) {
    it(`equals the raw log's aggregation: ${label}`, async () => {
      const from = new Date(T0 + a);
      const to = new Date(T0 + b);
      for (const model of [undefined, "m-1"]) {
        const raw = await rawTotals(from, to, model);
        const s = await usageStats(ctx, accountId, { from, to, granularity: "hour", timeZone: "UTC", model });
        expect({
          requests: s.total.requests.toString(),
          errors: s.total.errors.toString(),
          prompt: s.total.promptTokens.toString(),
          completion: s.total.completionTokens.toString(),
          cost: s.total.costMicro.toString(),
        }).toEqual(raw);
        expect(s.series.reduce((n, x) => n + x.requests, 0n).toString()).toBe(raw.requests);
        expect(s.byModel.reduce((n, x) => n + x.costMicro, 0n).toString()).toBe(raw.cost);
        expect(s.byKey.reduce((n, x) => n + x.requests, 0n).toString()).toBe(raw.requests);
      }
      const spend = await spendBetween(ctx, accountId, from, to);
      expect(spend.costMicro.toString()).toBe((await rawTotals(from, to)).cost);
    });
  }

  it("reports usage without a key under a null key, and day buckets in a time zone", async () => {
    const from = new Date(T0);
    const to = new Date(T0 + 72 * 3600_000);
    const s = await usageStats(ctx, accountId, { from, to, granularity: "day", timeZone: "America/New_York" });
    expect(s.byKey.map((k) => k.apiKeyId).sort()).toEqual([...keys, null].sort());
    const [nullRows] = await q<{ n: string }>(
      `SELECT count(*)::text AS n FROM usage_logs WHERE account_id = $1 AND api_key_id IS NULL`,
      [accountId],
    );
    expect(s.byKey.find((k) => k.apiKeyId === null)!.requests.toString()).toBe(nullRows!.n);
    // The rows span 00:00–16:25 UTC on 1 March: New York days starting 28 Feb 05:00 and 1 Mar 05:00 UTC.
    expect(s.series.map((x) => x.bucket.toISOString())).toEqual([
      "2026-02-28T05:00:00.000Z",
      "2026-03-01T05:00:00.000Z",
    ]);
  });

  it("follows settlement, duplicates included, exactly", async () => {
    const started = new Date(T0 + 10 * 3600_000 + 30 * 60_000).toISOString();
    const event = (i: number) => ({
      requestId: `settled_${i}`,
      keyId: keys[0]!,
      accountId,
      model: "m-9",
      protocol: "openai" as const,
      upstream: "u",
      stream: false,
      promptTokens: 10,
      completionTokens: 20,
      reasoningTokens: 0,
      cachedTokens: 0,
      cost: "7",
      status: 200,
      errorCode: null,
      latencyMs: 5,
      ttftMs: 1,
      clientIp: null,
      startedAt: started,
      cacheWrite5mTokens: 0,
      cacheWrite1hTokens: 0,
      prices: null,
      estimated: false,
      endUser: null,
      tags: [],
    });
    expect(await settleUsageBatch(db.db, [event(1), event(2), event(3)])).toBe(3);
    expect(await settleUsageBatch(db.db, [event(2), event(3), event(4)])).toBe(1);
    const s = await usageStats(ctx, accountId, {
      from: new Date(T0),
      to: new Date(T0 + 48 * 3600_000),
      granularity: "hour",
      timeZone: "UTC",
      model: "m-9",
    });
    expect(s.total).toMatchObject({ requests: 4n, promptTokens: 40n, completionTokens: 80n, costMicro: 28n });
  });
});
