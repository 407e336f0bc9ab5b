// Times the usage statistics and usage-log queries on a one-million-row usage log (`npm run bench:stats`).
// The rows are generated in Postgres (generate_series), for one busy account among others, over 30 days.
import { performance } from "node:perf_hooks";
import { usageStats } from "../../control-plane/src/stats/aggregate.ts";
import { usagePage } from "../../control-plane/src/stats/usage-log.ts";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { freshDatabase } from "../helpers/postgres.ts";

const ROWS = Number(process.env.STATS_ROWS ?? 1_000_000);
const db = await freshDatabase("stats");
try {
  const exec = (sql: string) => db.db.sql.transaction((tx) => tx.exec(sql));
  const q = <T>(sql: string) => db.db.sql.transaction((tx) => tx.query<T>(sql));
  await exec(`INSERT INTO accounts (id, name) SELECT gen_random_uuid(), 'acct-' || i FROM generate_series(1, 20) AS i`);
  await exec(`INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist)
    SELECT gen_random_uuid(), a.id, 'key-' || k, md5(a.id::text || k), 'sk-…', '{}', '{}' FROM accounts a, generate_series(1, 10) AS k`);
  const [busy] = await q<{ id: string }>(`SELECT id FROM accounts ORDER BY name LIMIT 1`);
  let t = performance.now();
  // Half the rows belong to the busy account, the rest spread over the others.
  await exec(`INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, status, prompt_tokens, completion_tokens, cost_micro, latency_ms, started_at)
    WITH k AS (SELECT ak.id, ak.account_id, (row_number() OVER (ORDER BY a.name, ak.name) - 1)::int AS n FROM api_keys ak JOIN accounts a ON a.id = ak.account_id)
    SELECT gen_random_uuid(), 'req_' || i, k.account_id, k.id, 'model-' || (i % 5), 'openai', CASE WHEN i % 50 = 0 THEN 502 ELSE 200 END,
           100 + i % 900, 50 + i % 400, 10 + i % 1000, 100 + i % 2000, now() - (i % (30 * 24 * 60)) * interval '1 minute'
    FROM generate_series(1, ${ROWS}) AS i
    JOIN k ON k.n = CASE WHEN i % 2 = 0 THEN i % 10 ELSE 10 + i % 190 END`);
  if (process.env.STATS_EXTRA_SQL) await exec(process.env.STATS_EXTRA_SQL);
  await exec(`ANALYZE usage_logs`);
  console.log(`inserted ${ROWS} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32) } as ServiceContext;
  const now = new Date();
  const day = 86_400_000;
  const time = async (label: string, fn: () => Promise<unknown>) => {
    await fn(); // warm
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      t = performance.now();
      await fn();
      runs.push(performance.now() - t);
    }
    runs.sort((a, b) => a - b);
    console.log(`| ${label} | ${runs[2]!.toFixed(1)} ms |`);
  };
  console.log(`\n| query on ${ROWS.toLocaleString("en")} rows (busy account: half of them) | median of 5 |\n|---|---|`);
  await time("usageStats, 30 days by day, all models and keys", () =>
    usageStats(ctx, busy!.id, {
      from: new Date(now.getTime() - 30 * day),
      to: now,
      granularity: "day",
      timeZone: "UTC",
    }),
  );
  await time("usageStats, 7 days by hour", () =>
    usageStats(ctx, busy!.id, {
      from: new Date(now.getTime() - 7 * day),
      to: now,
      granularity: "hour",
      timeZone: "Europe/Berlin",
    }),
  );
  await time("usageStats, 30 days by day, one model", () =>
    usageStats(ctx, busy!.id, {
      from: new Date(now.getTime() - 30 * day),
      to: now,
      granularity: "day",
      timeZone: "UTC",
      model: "model-3",
    }),
  );
  await time("usage log, first page of 50", () => usagePage(ctx, busy!.id, {}, 50));
  await time("usage log, page of 50 filtered by model and failures", () =>
    usagePage(ctx, busy!.id, { model: "model-2", success: false }, 50),
  );
} finally {
  await db.drop();
}
