import type { UsageEvent } from "@modelgate/data-plane";
import { pgArray } from "./usage-rows.ts";

// The rollups of rows settlement wrote straight into the log's partitions, where the log's statement triggers
// (usage_logs_rollup, usage_attribution_insert) do not fire: the same sums, added in one statement from the
// batch's sums made here. What a trigger groups in SQL is grouped here first, at the finest grain the rollups
// need, and grouped again by each rollup's key in SQL, so every rollup gets the figures the trigger would give
// it (test/services/settle-direct.test.ts holds the two together). Rows are added in key order, as the triggers
// add them, so concurrent settlers lock rollup rows in one order.

const ZERO_KEY = "00000000-0000-0000-0000-000000000000";
const SUMS = (t: string) =>
  `sum(${t}.requests), sum(${t}.errors), sum(${t}.prompt_tokens), sum(${t}.completion_tokens),
   sum(${t}.reasoning_tokens), sum(${t}.cached_tokens), sum(${t}.cost_micro)`;
const ADD = (t: string) =>
  `requests = ${t}.requests + EXCLUDED.requests, errors = ${t}.errors + EXCLUDED.errors,
   prompt_tokens = ${t}.prompt_tokens + EXCLUDED.prompt_tokens,
   completion_tokens = ${t}.completion_tokens + EXCLUDED.completion_tokens,
   reasoning_tokens = ${t}.reasoning_tokens + EXCLUDED.reasoning_tokens,
   cached_tokens = ${t}.cached_tokens + EXCLUDED.cached_tokens, cost_micro = ${t}.cost_micro + EXCLUDED.cost_micro`;
const FIGURES = `requests, errors, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro`;
const FIGURE_TYPES = (from: number) => Array.from({ length: 7 }, (_, i) => `$${from + i}::bigint[]`).join(", ");

/**
 * $1–$12: per (account, UTC hour, key, model, upstream); $13–$22: per (account, UTC day, end user); $23–$34: per
 * (account, tag, UTC hour, key, model). Each group's figures: requests, errors, the four token counts, cost.
 */
export const ROLLUP_NEW = `
WITH g AS (
  SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[], $4::text[], $5::text[], ${FIGURE_TYPES(6)})
    AS g(account_id, hour, api_key_id, model, upstream, ${FIGURES})
), customer AS (
  INSERT INTO usage_hourly AS h (account_id, hour, api_key_id, model, ${FIGURES})
  SELECT g.account_id, date_trunc('hour', g.hour), COALESCE(g.api_key_id, '${ZERO_KEY}'::uuid), g.model, ${SUMS("g")}
  FROM g GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, hour, api_key_id, model) DO UPDATE SET ${ADD("h")}
), operator AS (
  INSERT INTO usage_operator_hourly AS o (hour, account_id, model, upstream, ${FIGURES})
  SELECT date_trunc('hour', g.hour), g.account_id, g.model, COALESCE(g.upstream, ''), ${SUMS("g")}
  FROM g GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (hour, account_id, model, upstream) DO UPDATE SET ${ADD("o")}
), daily AS (
  INSERT INTO usage_operator_daily AS d (day, account_id, model, upstream, ${FIGURES})
  SELECT date_trunc('day', g.hour, 'UTC'), g.account_id, g.model, COALESCE(g.upstream, ''), ${SUMS("g")}
  FROM g GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (day, account_id, model, upstream) DO UPDATE SET ${ADD("d")}
), users AS (
  INSERT INTO usage_attribution_daily AS a (account_id, dimension, day, value, ${FIGURES})
  SELECT u.account_id, 'end_user', date_trunc('day', u.day, 'UTC'), u.end_user, ${SUMS("u")}
  FROM unnest($13::uuid[], $14::timestamptz[], $15::text[], ${FIGURE_TYPES(16)})
    AS u(account_id, day, end_user, ${FIGURES})
  GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
  ON CONFLICT (account_id, dimension, day, value) DO UPDATE SET ${ADD("a")}
)
INSERT INTO usage_tag_hourly AS t (account_id, tag, hour, api_key_id, model, ${FIGURES})
SELECT r.account_id, r.tag, date_trunc('hour', r.hour), COALESCE(r.api_key_id, '${ZERO_KEY}'::uuid), r.model,
  ${SUMS("r")}
FROM unnest($23::uuid[], $24::text[], $25::timestamptz[], $26::uuid[], $27::text[], ${FIGURE_TYPES(28)})
  AS r(account_id, tag, hour, api_key_id, model, ${FIGURES})
GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
ON CONFLICT (account_id, tag, hour, api_key_id, model) DO UPDATE SET ${ADD("t")}`;

/** A group's figures: requests, errors, prompt, completion, reasoning and cached tokens, cost (micro-units). */
type Figures = [number, number, number, number, number, number, bigint];
/** A group: its key's columns (a time as epoch ms, written as a timestamp), and its figures. */
interface Group {
  key: (string | number | null)[];
  figures: Figures;
}

const HOUR = 3_600_000;
const DAY = 86_400_000;

/**
 * ROLLUP_NEW's parameters for the new rows `rows` (events, as written). A group's id joins its key's columns with
 * NUL, which no Postgres text holds (an event holding one could not be written), so two keys never share one.
 */
export function rollupParams(rows: readonly UsageEvent[]): string[] {
  const base = new Map<string, Group>();
  const users = new Map<string, Group>();
  const tags = new Map<string, Group>();
  const add = (groups: Map<string, Group>, id: string, key: Group["key"], e: UsageEvent, cost: bigint) => {
    let g = groups.get(id);
    if (g === undefined) groups.set(id, (g = { key, figures: [0, 0, 0, 0, 0, 0, 0n] }));
    const f = g.figures;
    f[0]++;
    if (e.status < 200 || e.status >= 300) f[1]++;
    f[2] += e.promptTokens;
    f[3] += e.completionTokens;
    f[4] += e.reasoningTokens;
    f[5] += e.cachedTokens;
    f[6] += cost;
  };
  for (const e of rows) {
    const ms = Date.parse(e.startedAt);
    const hour = Math.floor(ms / HOUR) * HOUR;
    const cost = BigInt(e.cost);
    const upstream = e.upstream ?? "";
    add(
      base,
      `${e.accountId}\u0000${hour}\u0000${e.keyId}\u0000${e.model}\u0000${upstream}`,
      [e.accountId, hour, e.keyId, e.model, upstream],
      e,
      cost,
    );
    if (e.endUser !== null) {
      const day = Math.floor(ms / DAY) * DAY;
      add(users, `${e.accountId}\u0000${day}\u0000${e.endUser}`, [e.accountId, day, e.endUser], e, cost);
    }
    // every element, as the trigger's unnest(tags) counts them
    for (const tag of e.tags)
      add(
        tags,
        `${e.accountId}\u0000${tag}\u0000${hour}\u0000${e.keyId}\u0000${e.model}`,
        [e.accountId, tag, hour, e.keyId, e.model],
        e,
        cost,
      );
  }
  return [...columns(base, 5, 1), ...columns(users, 3, 1), ...columns(tags, 5, 2)];
}

/** A map's groups as array parameters: its `width` key columns (the one at `time` a timestamp), then the figures. */
function columns(groups: Map<string, Group>, width: number, time: number): string[] {
  const list = [...groups.values()];
  const out: string[] = [];
  for (let i = 0; i < width; i++)
    out.push(pgArray(list, i === time ? (g) => new Date(g.key[i] as number).toISOString() : (g) => g.key[i]));
  for (let i = 0; i < 7; i++) out.push(pgArray(list, (g) => g.figures[i]));
  return out;
}
