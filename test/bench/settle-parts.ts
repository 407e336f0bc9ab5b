// What each part of a usage-log insert costs Postgres per row (`npx tsx --conditions=modelgate-source
// test/bench/settle-parts.ts`): the same synthetic rows inserted round-robin, in one backend whose on-CPU time
// (/proc/<pid>/schedstat) is read around each statement, so that the machine's other load shifts every variant
// alike and the medians compare (bench:settle's per-statement figures move by a third between runs on a shared
// machine; a difference of a few µs between two of its runs is noise).
//
// 1. Indexes: copies of the log (unpartitioned) with its primary key and unique (request_id, started_at) and one
//    more index each; a variant's cost over the first is that index's.
// 2. Triggers: usage_logs itself (partitioned, every index), in batches of 300 rows as settlement writes them, with
//    its AFTER INSERT statement triggers on or off one at a time, and with settlement's ON CONFLICT … RETURNING.
// 3. COPY: the same batches by COPY, into the day's partition (as settlement writes new rows) and into usage_logs.
// Knobs: PARTS_ROWS (30000), PARTS_ROUNDS (6).
import { readFileSync } from "node:fs";
import pg from "pg";
import { to as copyTo } from "pg-copy-streams";
import { copyInto } from "../../control-plane/src/db/copy-in.ts";
import { freshDatabase } from "../helpers/postgres.ts";

const ROWS = Number(process.env.PARTS_ROWS ?? 30_000);
const ROUNDS = Number(process.env.PARTS_ROUNDS ?? 6);
const BATCH = 300;
const onCpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;

const fx = await freshDatabase("parts");
const c = new pg.Client({ connectionString: fx.url });
await c.connect();
const q = async <R = Record<string, unknown>>(sql: string) => (await c.query(sql)).rows as R[];
const pid = (await q<{ p: number }>("SELECT pg_backend_pid() AS p"))[0]!.p;

// The rows: four accounts, twenty keys, five models, in time order (as calls end); a tenth with an end user, a
// sixth with tags, as bench:settle's events.
await q(`CREATE TABLE s (LIKE usage_logs INCLUDING DEFAULTS)`);
await q(`ALTER TABLE s ADD COLUMN n int`);
await q(`INSERT INTO s (id, request_id, account_id, api_key_id, model, protocol, upstream, status, prompt_tokens,
    completion_tokens, cost_micro, latency_ms, started_at, end_user, tags, batch_id, n)
  SELECT gen_random_uuid(), 'req_' || md5(i::text), ('00000000-0000-0000-0000-00000000000' || (i % 4))::uuid,
    ('00000000-0000-0000-0001-0000000000' || lpad((i % 20)::text, 2, '0'))::uuid,
    (ARRAY['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4', 'gemini-2.5-flash', 'gpt-4.1'])[1 + i % 5], 'openai', 'u',
    200, 100 + i % 900, 50 + i % 400, 1000 + i, 100 + i % 900, date_trunc('day', now()) + interval '1 hour' + i * interval '10 ms',
    CASE WHEN i % 10 = 0 THEN 'user-' || (i % 200) END,
    CASE WHEN i % 6 = 0 THEN ARRAY['team=search', 'env=prod'] ELSE '{}' END, gen_random_uuid(), i
  FROM generate_series(1, ${ROWS}) AS i`);
await q(`CREATE INDEX ON s (n)`);
await q(`ANALYZE s`);
const cols = (
  await q<{ c: string }>(`SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS c FROM pg_attribute
    WHERE attrelid = 'usage_logs'::regclass AND attnum > 0 AND NOT attisdropped`)
)[0]!.c;

/** Runs each variant once per round (after one warm-up round); the median µs per row of each. */
async function roundRobin(variants: { prepare: () => Promise<void>; insert: () => Promise<number> }[]) {
  const samples: number[][] = variants.map(() => []);
  for (let r = 0; r <= ROUNDS; r++)
    for (const [i, v] of variants.entries()) {
      await v.prepare();
      const ns = await v.insert();
      if (r > 0) samples[i]!.push(ns / ROWS / 1000);
    }
  return samples.map(median);
}
const timed = async (sql: string) => {
  const t0 = onCpuNs(pid);
  await q(sql);
  return onCpuNs(pid) - t0;
};

const indexes: [string, string | null][] = [
  ["primary key (started_at, id) + unique (request_id, started_at)", null],
  ["(account_id, started_at, id)", "(account_id, started_at, id)"],
  ["(api_key_id, started_at, id)", "(api_key_id, started_at, id)"],
  ["(account_id, model, started_at, id)", "(account_id, model, started_at, id)"],
  [
    "(account_id, end_user, started_at) WHERE end_user IS NOT NULL",
    "(account_id, end_user, started_at) WHERE end_user IS NOT NULL",
  ],
  ["GIN (tags) WHERE tags <> '{}'", "USING GIN (tags) WHERE tags <> '{}'"],
];
for (const [i, [, index]] of indexes.entries()) {
  await q(`CREATE TABLE t${i} (LIKE usage_logs INCLUDING DEFAULTS, PRIMARY KEY (started_at, id))`);
  await q(`CREATE UNIQUE INDEX ON t${i} (request_id, started_at)`);
  if (index) await q(`CREATE INDEX ON t${i} ${index}`);
  await q(`ALTER TABLE t${i} SET (autovacuum_enabled = false)`);
}
const byIndex = await roundRobin(
  indexes.map((_, i) => ({
    prepare: async () => void (await q(`TRUNCATE t${i}`)),
    insert: () => timed(`INSERT INTO t${i} SELECT ${cols} FROM s`),
  })),
);
console.log(`\n${ROWS.toLocaleString("en")} rows, median of ${ROUNDS} rounds\n`);
console.log(`| a copy of the log with | µs per row | the index's own |\n|---|---|---|`);
for (const [i, [name]] of indexes.entries())
  console.log(`| ${name} | ${byIndex[i]!.toFixed(2)} | ${i === 0 ? "" : (byIndex[i]! - byIndex[0]!).toFixed(2)} |`);

const triggers = (
  await q<{ tgname: string }>(`SELECT tgname FROM pg_trigger WHERE tgrelid = 'usage_logs'::regclass
    AND NOT tgisinternal AND tgtype & 4 = 4 ORDER BY tgname`)
).map((r) => r.tgname); // the AFTER INSERT ones
const rollups = (
  await q<{ t: string }>(`SELECT c.relname AS t FROM pg_class c WHERE c.relkind = 'r'
    AND c.relname IN ('usage_hourly', 'usage_operator_hourly', 'usage_operator_daily', 'usage_attribution_daily')`)
).map((r) => r.t);
const logVariants: [string, string[], string][] = [
  ["every trigger", [], ""],
  [
    "every trigger, ON CONFLICT DO NOTHING RETURNING request_id (as settlement)",
    [],
    " ON CONFLICT (request_id, started_at) DO NOTHING RETURNING request_id",
  ],
  ...triggers.map((t): [string, string[], string] => [`without ${t}`, [t], ""]),
  ["no trigger", triggers, ""],
];
const byTrigger = await roundRobin(
  logVariants.map(([, off, tail]) => ({
    prepare: async () => {
      await q(`TRUNCATE usage_logs, ${rollups.join(", ")}`);
      for (const t of triggers)
        await q(`ALTER TABLE usage_logs ${off.includes(t) ? "DISABLE" : "ENABLE"} TRIGGER ${t}`);
    },
    insert: async () => {
      let ns = 0;
      for (let b = 0; b < ROWS; b += BATCH)
        ns += await timed(
          `INSERT INTO usage_logs (${cols}) SELECT ${cols} FROM s WHERE n > ${b} AND n <= ${b + BATCH}${tail}`,
        );
      return ns;
    },
  })),
);
console.log(`\n| usage_logs, batches of ${BATCH} | µs per row |\n|---|---|`);
for (const [i, [name]] of logVariants.entries()) console.log(`| ${name} | ${byTrigger[i]!.toFixed(2)} |`);

// 3. COPY: the same batches as COPY's text, into the day's partition (as settlement writes new rows: no trigger
//    fires there) and into usage_logs (its triggers fire, and COPY then inserts row by row).
const day = (await q<{ d: string }>(`SELECT to_char(min(started_at) AT TIME ZONE 'UTC', 'YYYYMMDD') AS d FROM s`))[0]!
  .d;
const texts: string[] = [];
for (let b = 0; b < ROWS; b += BATCH) {
  let text = "";
  for await (const chunk of c.query(
    copyTo(`COPY (SELECT ${cols} FROM s WHERE n > ${b} AND n <= ${b + BATCH} ORDER BY n) TO STDOUT`),
  ))
    text += (chunk as Buffer).toString();
  texts.push(text);
}
for (const t of triggers) await q(`ALTER TABLE usage_logs ENABLE TRIGGER ${t}`);
const copyVariants: [string, string][] = [
  ["COPY into the day's partition (no trigger fires)", `"usage_logs_p${day}"`],
  ["COPY into usage_logs (every trigger)", "usage_logs"],
];
const byCopy = await roundRobin(
  copyVariants.map(([, table]) => ({
    prepare: async () => void (await q(`TRUNCATE usage_logs, ${rollups.join(", ")}`)),
    insert: async () => {
      let ns = 0;
      for (const text of texts) {
        const t0 = onCpuNs(pid);
        await copyInto(c, `COPY ${table} (${cols}) FROM STDIN`, text);
        ns += onCpuNs(pid) - t0;
      }
      return ns;
    },
  })),
);
console.log(`\n| COPY, batches of ${BATCH} | µs per row |\n|---|---|`);
for (const [i, [name]] of copyVariants.entries()) console.log(`| ${name} | ${byCopy[i]!.toFixed(2)} |`);
await c.end();
await fx.drop();
