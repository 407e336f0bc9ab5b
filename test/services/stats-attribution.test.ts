import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { type AttributionDimension, usageByAttribution, usageStats } from "../../control-plane/src/stats/aggregate.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Cost attribution (usage by end user and by tag) reads the daily attribution rollup for whole UTC days and the
// log for the edges; whatever the window and the filters, it must equal an aggregation of the raw log.

let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext;
let accountId: string;
let otherAccount: string;
let keyId: string;
const T0 = Date.parse("2026-03-01T00:00:00Z");
const HOUR = 3600_000;
const q = <T>(sql: string, params: unknown[] = []) => db.db.sql.transaction((tx) => tx.query<T>(sql, params));

/** 1,000 rows over ~3.3 days at irregular seconds: end users on most, tags on some, one or two tags. */
const insertRows = (account: string, part: number) =>
  q(
    `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, status, prompt_tokens, completion_tokens,
       reasoning_tokens, cached_tokens, cost_micro, latency_ms, started_at, end_user, tags)
     SELECT gen_random_uuid(), $1::text || '_' || $2::int || '_' || i, $1::uuid, 'm-' || (i % 3), 'openai',
            CASE WHEN i % 11 = 0 THEN 500 ELSE 200 END, i % 97, i % 53, i % 5, i % 13, i * 3, 10,
            $3::timestamptz + (i * 287 + $2::int * 17) * interval '1 second',
            CASE WHEN i % 4 = 0 THEN NULL ELSE 'user-' || (i % 9) END,
            CASE WHEN i % 5 = 0 THEN ARRAY['team=ml', 'env=prod'] WHEN i % 3 = 0 THEN ARRAY['team=search'] ELSE '{}' END
     FROM generate_series(1, 1000) AS i`,
    [account, part, new Date(T0).toISOString()],
  );

beforeAll(async () => {
  db = await freshDatabase("attribution");
  ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32) };
  accountId = (await db.db.prisma.account.create({ data: { name: "acme", balanceMicro: 10n ** 10n } })).id;
  otherAccount = (await db.db.prisma.account.create({ data: { name: "other", balanceMicro: 10n ** 10n } })).id;
  keyId = (
    await db.db.prisma.apiKey.create({
      data: { accountId, name: "k", keyHash: "k", prefix: "k", allowedModels: [], ipAllowlist: [] },
    })
  ).id;
  // in several statements (the triggers aggregate per statement), and another account's rows beside them
  for (let part = 0; part < 3; part++) await insertRows(accountId, part);
  await insertRows(otherAccount, 0);
  // Estimates settled, then replaced by their exact counts (settlement's UPDATE): the rollup follows the
  // difference, for a call with an end user and tags and for one without (the null group).
  const event = (requestId: string, endUser: string | null, tags: string[], estimated: boolean) => ({
    requestId,
    keyId,
    accountId,
    model: "m-1",
    protocol: "openai" as const,
    upstream: "u",
    stream: true,
    promptTokens: estimated ? 10 : 40,
    completionTokens: estimated ? 5 : 25,
    reasoningTokens: 0,
    cachedTokens: 0,
    cost: estimated ? "100" : "2500",
    status: 200,
    errorCode: null,
    latencyMs: 5,
    ttftMs: 1,
    clientIp: null,
    startedAt: new Date(T0 + 26 * HOUR).toISOString(),
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    prices: null,
    estimated,
    endUser,
    tags,
  });
  await settleUsageBatch(db.db, [event("est-1", "user-2", ["team=ml"], true), event("est-2", null, [], true)]);
  await settleUsageBatch(db.db, [event("est-1", "user-2", ["team=ml"], false), event("est-2", null, [], false)]);
});
afterAll(async () => db?.drop());

interface Filter {
  model?: string;
  endUser?: string;
  tag?: string;
  apiKeyId?: string;
}

async function raw(from: Date, to: Date, by: AttributionDimension, f: Filter) {
  const key = by === "endUser" ? "end_user" : "t.tag";
  const table = by === "endUser" ? "usage_logs" : "usage_logs CROSS JOIN LATERAL unnest(tags) AS t(tag)";
  return q<Record<string, string | null>>(
    `SELECT ${key} AS key, count(*)::text AS requests,
            count(*) FILTER (WHERE status < 200 OR status >= 300)::text AS errors,
            sum(prompt_tokens)::text AS prompt, sum(cost_micro)::text AS cost
     FROM ${table}
     WHERE account_id = $1 AND started_at >= $2 AND started_at < $3 AND ($4::text IS NULL OR model = $4)
       AND ($5::text IS NULL OR end_user = $5) AND ($6::text IS NULL OR tags @> ARRAY[$6]::text[])
       AND ($7::uuid IS NULL OR api_key_id = $7)
     GROUP BY 1 ORDER BY sum(cost_micro) DESC, 1`,
    [
      accountId,
      from.toISOString(),
      to.toISOString(),
      f.model ?? null,
      f.endUser ?? null,
      f.tag ?? null,
      f.apiKeyId ?? null,
    ],
  );
}

describe("cost attribution over the daily rollup", () => {
  const windows: [string, number, number][] = [
    ["aligned days", 0, 4 * 24 * HOUR],
    ["ragged edges", 7 * HOUR + 13 * 60_000, 3 * 24 * HOUR + 5 * HOUR],
    ["inside one day", 30 * HOUR, 40 * HOUR],
    ["crossing one midnight", 20 * HOUR, 28 * HOUR + 1_000],
  ];
  const filters = (): Filter[] => [
    {},
    { model: "m-1" },
    { endUser: "user-2" },
    { tag: "team=ml" },
    { apiKeyId: keyId },
  ];
  for (const [label, a, b] of windows)
    for (const by of ["endUser", "tag"] as const)
      it(`equals the raw log's aggregation by ${by}: ${label}`, async () => {
        const from = new Date(T0 + a);
        const to = new Date(T0 + b);
        for (const f of filters()) {
          const expected = await raw(from, to, by, f);
          const got = await usageByAttribution(ctx, accountId, { from, to, ...f }, by);
          expect(
            got.map((r) => ({
              key: r.key,
              requests: r.requests.toString(),
              errors: r.errors.toString(),
              prompt: r.promptTokens.toString(),
              cost: r.costMicro.toString(),
            })),
            `${label} by ${by} ${JSON.stringify(f)}`,
          ).toEqual(expected);
        }
      });

  it("keeps the daily rollup small: a row per account, day and end user, and none for tags", async () => {
    const rows = await q<{ dimension: string; n: string }>(
      `SELECT dimension, count(*)::text AS n FROM usage_attribution_daily WHERE account_id = $1 GROUP BY 1`,
      [accountId],
    );
    // 9 end users over the 4 UTC days the rows touch; tags are read from usage_tag_hourly only
    expect(rows.map((r) => r.dimension)).toEqual(["end_user"]);
    expect(Number(rows[0]!.n)).toBeLessThanOrEqual(4 * 9);
    expect(Number(rows[0]!.n)).toBeGreaterThan(3 * 9);
  });
});

describe("statistics filtered by a tag, over the tag's hourly rollup", () => {
  const windows: [string, number, number][] = [
    ["aligned days", 0, 4 * 24 * HOUR],
    ["ragged edges", 7 * HOUR + 13 * 60_000, 3 * 24 * HOUR + 5 * HOUR],
    ["inside one hour", 30 * HOUR + 60_000, 30 * HOUR + 50 * 60_000],
  ];
  const fig = (r: { requests: bigint; errors: bigint; promptTokens: bigint; costMicro: bigint }) =>
    `${r.requests}/${r.errors}/${r.promptTokens}/${r.costMicro}`;
  for (const [label, a, b] of windows)
    for (const granularity of ["hour", "day"] as const)
      it(`equals the raw log's aggregation by ${granularity}: ${label}`, async () => {
        const from = new Date(T0 + a);
        const to = new Date(T0 + b);
        for (const tag of ["team=ml", "env=prod", "team=search", "nobody"]) {
          const expected = async (group: string) =>
            (
              await q<{ g: string | null; f: string }>(
                `SELECT ${group} AS g, count(*) || '/' || count(*) FILTER (WHERE status < 200 OR status >= 300)
                          || '/' || sum(prompt_tokens) || '/' || sum(cost_micro) AS f
                 FROM usage_logs WHERE account_id = $1 AND started_at >= $2 AND started_at < $3
                   AND tags @> ARRAY[$4]::text[]
                 GROUP BY 1 ORDER BY 1`,
                [accountId, from.toISOString(), to.toISOString(), tag],
              )
            ).map((r) => [r.g, r.f]);
          const got = await usageStats(ctx, accountId, { from, to, tag, granularity, timeZone: "UTC" });
          const at = `${label} by ${granularity}, tag ${tag}`;
          expect(
            got.series.map((r) => [r.bucket.toISOString(), fig(r)]),
            at,
          ).toEqual(
            await expected(`to_char(date_trunc('${granularity}', started_at, 'UTC'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`),
          );
          const sorted = (rows: (string | null)[][]) =>
            [...rows].sort((x, y) => String(x[0]).localeCompare(String(y[0])));
          expect(sorted(got.byModel.map((r) => [r.model, fig(r)])), at).toEqual(await expected("model"));
          expect(sorted(got.byKey.map((r) => [r.apiKeyId, fig(r)])), at).toEqual(await expected("api_key_id::text"));
          const total = await expected("NULL::text");
          expect(got.total.requests === 0n ? [] : [[null, fig(got.total)]], at).toEqual(total);
        }
      });

  it("keeps the rollup to a row per account, tag, hour, key and model", async () => {
    const [r] = await q<{ n: string; calls: string }>(
      `SELECT count(*)::text AS n, sum(requests)::text AS calls FROM usage_tag_hourly WHERE account_id = $1`,
      [accountId],
    );
    const [l] = await q<{ n: string }>(
      `SELECT sum(cardinality(tags))::text AS n FROM usage_logs WHERE account_id = $1`,
      [accountId],
    );
    expect(r!.calls).toBe(l!.n); // every tag of every call, once
    // 3 tags × 3 models (and the key of the two settled calls) over the ~80 hours the rows touch
    expect(Number(r!.n)).toBeLessThanOrEqual(81 * 3 * 3 + 2);
  });
});
