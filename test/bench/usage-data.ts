// The synthetic usage log shared by bench:volume and bench:upgrade: 50 accounts (half of all rows in the first),
// 3 keys each, 4 models, 3 upstreams, rows spread evenly over a span; the same rows whether they go through
// settlement (usageEvent) or in bulk (seedRows), so both benches measure the same log.
import { readFileSync } from "node:fs";
import type pg from "pg";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import type { SqlRunner } from "../../control-plane/src/db/client.ts";

export const ACCOUNTS = 50;
export const KEYS = 3;
export const MODELS = ["gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "claude-sonnet-4-20250514", "gemini-2.5-flash"];
export const UPSTREAMS = ["openai", "anthropic", "vertex"];
export const DAY = 86_400_000;

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** A process's time on a CPU so far, in ns (a Postgres backend's, by its pid). */
export const onCpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);

/** Settlement's SqlRunner on one client, so that its backend's CPU can be read by pid. */
export const clientRunner = (c: pg.Client): SqlRunner => ({
  async transaction(fn) {
    await c.query("BEGIN");
    try {
      const r = await fn({
        exec: async (s) => void (await c.query(s)),
        query: async (s, p) => (await c.query(s, p as unknown[])).rows,
      });
      await c.query("COMMIT");
      return r;
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    }
  },
  close: async () => undefined,
});

/** Creates the accounts and their keys (columns every schema since the first migration has). */
export async function seedAccounts(c: pg.Client): Promise<{ accountIds: string[]; keyIds: string[] }> {
  await c.query(`INSERT INTO accounts (id, name, balance_micro) SELECT gen_random_uuid(), 'acct-' || lpad(i::text, 3, '0'), 1000000000000000
                 FROM generate_series(1, ${ACCOUNTS}) AS i`);
  await c.query(`INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist)
                 SELECT gen_random_uuid(), a.id, 'key-' || k, md5(a.id::text || k), 'sk-…', '{}', '{}'
                 FROM accounts a, generate_series(1, ${KEYS}) AS k`);
  return accountKeys(c);
}

/** The accounts (busy one first) and their keys, in the order the rows use them. */
export async function accountKeys(c: pg.Client): Promise<{ accountIds: string[]; keyIds: string[] }> {
  const keys = (
    await c.query<{ account: string; id: string }>(
      `SELECT a.id::text AS account, k.id::text AS id FROM accounts a JOIN api_keys k ON k.account_id = a.id ORDER BY a.name, k.name`,
    )
  ).rows;
  return { accountIds: [...new Set(keys.map((k) => k.account))], keyIds: keys.map((k) => k.id) };
}

/** Row i's account: even rows are the busy account's, odd rows spread over the rest. */
export const accountOf = (i: number) => (i % 2 === 0 ? 0 : 1 + (Math.floor(i / 2) % (ACCOUNTS - 1)));

/** Call i as the data plane reports it, starting at `at`. */
export function usageEvent(i: number, at: number, ids: { accountIds: string[]; keyIds: string[] }): UsageEvent {
  const a = accountOf(i);
  return {
    requestId: `settled_${i}_${at}`,
    keyId: ids.keyIds[a * KEYS + (i % KEYS)]!,
    accountId: ids.accountIds[a]!,
    model: MODELS[i % MODELS.length]!,
    protocol: "openai",
    upstream: UPSTREAMS[i % UPSTREAMS.length]!,
    stream: i % 5 < 3,
    promptTokens: 100 + (i % 900),
    completionTokens: 50 + (i % 400),
    reasoningTokens: 0,
    cachedTokens: 0,
    cost: String(10 + (i % 1000)),
    status: i % 50 === 0 ? 429 : 200,
    errorCode: i % 50 === 0 ? "rate_limited" : null,
    latencyMs: 100 + (i % 2000),
    ttftMs: i % 5 < 3 ? 50 + (i % 500) : null,
    clientIp: "203.0.113.7",
    startedAt: new Date(at).toISOString(),
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    prices: {
      input: "2500000",
      cachedInput: "1250000",
      cacheWrite5m: "2500000",
      cacheWrite1h: "2500000",
      output: "10000000",
    },
    estimated: false,
    endUser: i % 10 === 0 ? `user-${i % 2000}` : null,
    tags: i % 7 === 0 ? ["team=search", "env=prod"] : [],
  };
}

/**
 * Rows lo ≤ i < hi of a log of n rows over `spanMs` from t0, in one INSERT … SELECT generate_series into
 * usage_logs (the partitioned table or, in bench:upgrade, the table as it was before partitioning: the columns
 * are the same), so the rollup trigger fires as it does for settlement. Row i's cost is 10 + i % 1000 micro-units.
 */
export async function seedRows(
  c: pg.Client,
  r: { lo: number; hi: number; n: number; t0: number; spanMs: number },
  ids: { accountIds: string[]; keyIds: string[] },
): Promise<void> {
  await c.query(
    `INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, upstream, status, error_code,
       prompt_tokens, completion_tokens, input_tokens, cost_micro, latency_ms, ttft_ms, stream, client_ip, started_at,
       input_price, cached_input_price, cache_write_5m_price, cache_write_1h_price, output_price, end_user, tags)
     SELECT gen_random_uuid(), 'seed_' || i, ($1::uuid[])[a + 1], ($2::uuid[])[a * ${KEYS} + i % ${KEYS} + 1],
       ($3::text[])[i % ${MODELS.length} + 1], 'openai', ($4::text[])[i % ${UPSTREAMS.length} + 1],
       CASE WHEN i % 50 = 0 THEN 429 ELSE 200 END, CASE WHEN i % 50 = 0 THEN 'rate_limited' END,
       100 + i % 900, 50 + i % 400, 100 + i % 900, 10 + i % 1000, 100 + i % 2000,
       CASE WHEN i % 5 < 3 THEN 50 + i % 500 END, i % 5 < 3, '203.0.113.7',
       to_timestamp((${r.t0} + floor(i::numeric * ${r.spanMs} / ${r.n})) / 1000.0),
       2500000, 1250000, 2500000, 2500000, 10000000,
       CASE WHEN i % 10 = 0 THEN 'user-' || (i % 2000) END,
       CASE WHEN i % 7 = 0 THEN ARRAY['team=search', 'env=prod'] ELSE '{}' END
     FROM generate_series(${r.lo}::bigint, ${r.hi - 1}::bigint) AS i,
       LATERAL (SELECT CASE WHEN i % 2 = 0 THEN 0 ELSE 1 + (i / 2) % ${ACCOUNTS - 1} END AS a) AS x`,
    [ids.accountIds, ids.keyIds, MODELS, UPSTREAMS],
  );
}
