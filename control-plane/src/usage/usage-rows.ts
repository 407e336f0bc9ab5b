import { randomUUID } from "node:crypto";
import type { UsageEvent } from "@modelgate/data-plane";
import { copyField } from "../db/copy-in.ts";

// A usage-log row as settlement writes it, in the two forms it goes in: array parameters of one INSERT (a batch
// whose rows may exist already: ON CONFLICT tells which are new), or the lines of a COPY (a batch of new rows).

/** The columns settlement writes, in the order of both forms. */
export const USAGE_COLUMNS = `id, request_id, account_id, api_key_id, model, protocol, upstream, status, error_code,
  prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, ttft_ms, stream,
  client_ip, started_at, input_tokens, cache_write_5m_tokens, cache_write_1h_tokens, input_price,
  cached_input_price, cache_write_5m_price, cache_write_1h_price, output_price, estimated, end_user, tags, dropped,
  batch_id`;

/**
 * The rows of the batch into `table` (the log, or one of its partitions), those whose request has a row already
 * left out (the request id is unique together with started_at: see settle.ts); returns the new rows' request ids.
 * $1…$31 are usageRowParams' arrays, $32 the batch id.
 */
export const insertUsageSql = (table: string) => `
INSERT INTO ${table} (${USAGE_COLUMNS})
SELECT u.id, u.request_id, u.account_id, u.api_key_id, u.model, u.protocol, u.upstream, u.status,
  u.error_code, u.prompt_tokens, u.completion_tokens, u.reasoning_tokens, u.cached_tokens, u.cost_micro,
  u.latency_ms, u.ttft_ms, u.stream, u.client_ip, u.started_at, u.input_tokens, u.cache_write_5m_tokens,
  u.cache_write_1h_tokens, u.input_price, u.cached_input_price, u.cache_write_5m_price, u.cache_write_1h_price,
  u.output_price, u.estimated, u.end_user,
  u.tags::text[], u.dropped::text[], $32::uuid
FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[],
  $7::int[], $8::text[], $9::int[], $10::int[], $11::int[], $12::int[], $13::bigint[], $14::int[], $15::int[],
  $16::bool[], $17::text[], $18::timestamptz[], $19::int[], $20::int[], $21::int[], $22::numeric[], $23::numeric[],
  $24::numeric[], $25::numeric[], $26::numeric[], $27::bool[], $28::text[], $29::text[], $30::uuid[], $31::text[])
  AS u(request_id, account_id, api_key_id, model, protocol, upstream, status, error_code, prompt_tokens,
       completion_tokens, reasoning_tokens, cached_tokens, cost_micro, latency_ms, ttft_ms, stream, client_ip,
       started_at, input_tokens, cache_write_5m_tokens, cache_write_1h_tokens, input_price, cached_input_price,
       cache_write_5m_price, cache_write_1h_price, output_price, estimated, end_user, tags, id, dropped)
ON CONFLICT (request_id, started_at) DO NOTHING
RETURNING request_id`;

/** insertUsageSql's parameters for `list`. */
export function usageRowParams(list: readonly UsageEvent[], batchId: string): string[] {
  const col = pgArray<UsageEvent>;
  return [
    col(list, (e) => e.requestId),
    col(list, (e) => e.accountId),
    col(list, (e) => e.keyId),
    col(list, (e) => e.model),
    col(list, (e) => e.protocol),
    col(list, (e) => e.upstream),
    col(list, (e) => e.status),
    col(list, (e) => e.errorCode),
    col(list, (e) => e.promptTokens),
    col(list, (e) => e.completionTokens),
    col(list, (e) => e.reasoningTokens),
    col(list, (e) => e.cachedTokens),
    col(list, (e) => e.cost),
    col(list, (e) => e.latencyMs),
    col(list, (e) => e.ttftMs),
    col(list, (e) => e.stream),
    col(list, (e) => e.clientIp),
    col(list, (e) => e.startedAt),
    col(list, inputOf),
    col(list, (e) => e.cacheWrite5mTokens),
    col(list, (e) => e.cacheWrite1hTokens),
    col(list, (e) => e.prices?.input ?? null),
    col(list, (e) => e.prices?.cachedInput ?? null),
    col(list, (e) => e.prices?.cacheWrite5m ?? null),
    col(list, (e) => e.prices?.cacheWrite1h ?? null),
    col(list, (e) => e.prices?.output ?? null),
    col(list, (e) => e.estimated),
    col(list, (e) => e.endUser),
    col(list, (e) => arrayLiteral(e.tags)),
    col(list, () => timeOrderedId()),
    col(list, (e) => arrayLiteral(e.dropped ?? [])),
    batchId,
  ];
}

/**
 * The rows of `list` as COPY's text format, in USAGE_COLUMNS' order: what Postgres reads with one type input
 * call per field, where the INSERT's form has it take 31 array literals apart first and project each row.
 */
export function usageCopyText(list: readonly UsageEvent[], batchId: string): string {
  let out = "";
  for (const e of list) {
    const p = e.prices;
    out += `${timeOrderedId()}\t${copyField(e.requestId)}\t${copyField(e.accountId)}\t${copyField(e.keyId)}\t${copyField(
      e.model,
    )}\t${e.protocol}\t${copyField(e.upstream)}\t${e.status}\t${copyField(e.errorCode)}\t${e.promptTokens}\t${
      e.completionTokens
    }\t${e.reasoningTokens}\t${e.cachedTokens}\t${e.cost}\t${e.latencyMs}\t${copyField(e.ttftMs)}\t${
      e.stream ? "t" : "f"
    }\t${copyField(e.clientIp)}\t${copyField(e.startedAt)}\t${inputOf(e)}\t${e.cacheWrite5mTokens}\t${
      e.cacheWrite1hTokens
    }\t${copyField(p?.input)}\t${copyField(p?.cachedInput)}\t${copyField(p?.cacheWrite5m)}\t${copyField(
      p?.cacheWrite1h,
    )}\t${copyField(p?.output)}\t${e.estimated ? "t" : "f"}\t${copyField(e.endUser)}\t${copyField(
      arrayLiteral(e.tags),
    )}\t${copyField(arrayLiteral(e.dropped ?? []))}\t${batchId}\n`;
  }
  return out;
}

/** The billed tokens read from no cache and written to none. */
export const inputOf = (e: UsageEvent) =>
  Math.max(0, e.promptTokens - e.cachedTokens - e.cacheWrite5mTokens - e.cacheWrite1hTokens);

/** One element of a Postgres array literal: text quoted (escaped only when it holds a quote or a backslash). */
function arrayElement(v: unknown): string {
  if (typeof v === "string")
    return v.indexOf('"') === -1 && v.indexOf("\\") === -1 ? `"${v}"` : `"${v.replace(/["\\]/g, "\\$&")}"`;
  if (v === null || v === undefined) return "NULL";
  // digits, a sign, a point, an exponent, NaN, Infinity, true, false: nothing the literal's syntax reads
  if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") return String(v);
  throw new TypeError(`settlement: no array element for a ${typeof v}`);
}

/**
 * A column of values as the text of one Postgres array literal, for an array parameter ($1::uuid[], …). Given
 * a JS array, node-postgres writes the same text, but through its generic value conversion and two regular
 * expressions per element; this runs for ~40 elements per settled call (a profile of the control plane under
 * load had node-postgres's array conversion at ~7% of its CPU). Text is always quoted, so any string (commas,
 * braces, quotes, backslashes, whitespace, "NULL", "") is read back as itself.
 */
export function pgArray<T>(list: readonly T[], f: (item: T) => unknown): string {
  let out = "{";
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out += ",";
    out += arrayElement(f(list[i]!));
  }
  return out + "}";
}
export const same = <T>(v: T) => v;

/**
 * A list of text as one Postgres array literal, each element quoted: a row's tags travel as one element of a
 * text[] parameter and are cast per row (cheaper for Postgres than JSON taken apart per row).
 */
export const arrayLiteral = (items: readonly string[]): string => (items.length === 0 ? "{}" : pgArray(items, same));

/**
 * A time-ordered id (UUID version 7: milliseconds since the epoch, then random bits) for a new row: new rows'
 * ids land at the end of the primary-key index instead of on a random leaf page each, which on a large table
 * costs a full-page image in the WAL for most rows after every checkpoint (npm run bench:settle with
 * SETTLE_PREFILL). crypto.randomUUID() is a version 4 UUID: its first 48 bits become the time, its version
 * digit 7; the variant bits stay.
 */
export const timeOrderedId = (now = Date.now()): string => {
  if (now !== idMs) {
    const t = now.toString(16).padStart(12, "0");
    idPrefix = `${t.slice(0, 8)}-${t.slice(8, 12)}-7`;
    idMs = now;
  }
  return idPrefix + randomUUID().slice(15);
};
// the last millisecond's prefix: a batch's rows are made within a few milliseconds
let idMs = -1;
let idPrefix = "";
