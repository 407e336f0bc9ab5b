import pg from "pg";
import type { Prisma } from "../generated/prisma/client.ts";
import { COLUMNS, csvCell } from "./format.ts";

// A usage export's lines written by Postgres: one text value per row, already the file's line (CRLF-terminated CSV
// or LF-terminated JSON), so the control plane only moves bytes. Every cell is exactly what format.ts's csvLine and
// jsonLine make of the same row (test/services/export-lines.test.ts holds them equal over adversarial text): money
// as units without trailing zeros, times as toISOString writes them, client text defused and quoted as csvCell does
// it, JSON text as JSON.stringify writes it. The statements carry no bind parameters (COPY takes none): the few
// values they hold are written in as literals (inlineSql).

/**
 * The SQL text of a Prisma.Sql with its values written in as literals: text quoted by pg's escapeLiteral, times as
 * timestamptz literals, integers and booleans as they are. Anything else is refused rather than guessed at.
 */
export function inlineSql(sql: Prisma.Sql): string {
  let out = sql.strings[0]!;
  sql.values.forEach((v, i) => {
    out += literal(v) + sql.strings[i + 1]!;
  });
  return out;
}

export function literal(v: unknown): string {
  if (typeof v === "string") return pg.escapeLiteral(v);
  if (v instanceof Date) return `'${v.toISOString()}'::timestamptz`;
  if (typeof v === "number" && Number.isSafeInteger(v)) return String(v);
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "boolean") return v ? "TRUE" : "FALSE";
  throw new Error(`an export's filter holds a value that cannot be written as a literal (${typeof v})`);
}

// format.ts's classes, for Postgres's regular expressions: SPACE is JS's \s with the u flag (which the
// \s\u0000-\u001f… of format.ts spells out) plus what format.ts adds to it; NUL cannot occur in Postgres text.
const SPACE = String.raw`\u0001-\u0020\u007f-\u00a0\u1680\u180e\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff`;
const TRIGGER = String.raw`-=+@\u2212\ufe62\ufe63\ufe66\ufe6b\uff0b\uff0d\uff1d\uff20`;
const q = (s: string) => pg.escapeLiteral(s);

// Text csvCell writes unchanged: empty, or starting with a letter, digit or one of _ . : / and holding none of the
// characters that make a cell quoted or defused after its first (no separator, quote, line break; a trigger such as
// - = + @ only where no separator precedes it). Most cells are such and cost one match.
const CLEAN = q("^([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?$");
const CLEAN_LIST = q(
  `^([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?(${String.fromCharCode(31)}([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?)*$`,
);
const ANY_TRIGGER = q(`[${TRIGGER}]`);
const AT_START = q(`^[${SPACE}"]*[${TRIGGER}]`);
const AFTER_SEPARATOR = q(String.raw`([,;\t\r\n])(?=[${SPACE}"]*[${TRIGGER}])`);
const TAB_OR_CR_FIRST = q(String.raw`^[\t\r]`);
const QUOTED = q(String.raw`[",;\t\r\n]`);

/** defuseFormulas in SQL (x: an expression of non-null text; evaluated only for cells that are not clean). */
function defused(x: string) {
  const inner = `regexp_replace(${x}, ${AFTER_SEPARATOR}, ${q("\\1'")}, 'g')`;
  return `CASE WHEN ${x} !~ ${ANY_TRIGGER} THEN CASE WHEN ${x} ~ ${TAB_OR_CR_FIRST} THEN '''' || ${x} ELSE ${x} END
    WHEN ${inner} ~ ${AT_START} OR ${inner} ~ ${TAB_OR_CR_FIRST} THEN '''' || ${inner} ELSE ${inner} END`;
}

/** csvCell of text in SQL: '' for null, the text itself when clean, else defused and quoted. */
export function cellSql(x: string) {
  const d = `(${defused(x)})`;
  return `CASE WHEN ${x} IS NULL THEN '' WHEN ${x} ~ ${CLEAN} THEN ${x}
    WHEN ${d} ~ ${QUOTED} THEN '"' || replace(${d}, '"', '""') || '"' ELSE ${d} END`;
}

/** csvCell of a list (its JSON text, '[]' for none), with clean lists written directly. */
function listCellSql(col: string) {
  return `CASE WHEN ${col} IS NULL OR cardinality(${col}) = 0 THEN '[]'
    WHEN array_position(${col}, NULL) IS NULL AND array_to_string(${col}, chr(31)) ~ ${CLEAN_LIST}
      THEN '"[""' || array_to_string(${col}, '"",""') || '""]"'
    ELSE ${cellSql(`array_to_json(${col})::text`)} END`;
}

const TS = `to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const units = (col: string) => `trim_scale(${col}::numeric / 1000000)::text`;
// money in a CSV cell: a negative amount starts with '-', so csvCell defuses it
const csvMoney = (col: string) => `CASE WHEN ${col} < 0 THEN '''' ELSE '' END || ${units(col)}`;
const bool = (col: string) => `CASE WHEN ${col} THEN 'true' ELSE 'false' END`;
// the export's columns named as the table's: the token counts (prompt_tokens … cache_write_1h_tokens) and the prices
const between = (first: (typeof COLUMNS)[number], last: (typeof COLUMNS)[number]) =>
  COLUMNS.slice(COLUMNS.indexOf(first), COLUMNS.indexOf(last) + 1);
const TOKENS = between("prompt_tokens", "cache_write_1h_tokens");
const PRICES = between("input_price", "output_price");

/**
 * The key names' cells (CSV: csvCell of the name; JSON: the name as a JSON string), by key id, as a jsonb literal
 * looked up per row: formatted here once per key, not per row.
 */
function keyCellSql(keyNames: Map<string, string>, cell: (name: string) => string) {
  const cells: Record<string, string> = {};
  for (const [id, name] of keyNames) cells[id] = cell(name);
  return `(${q(JSON.stringify(cells))}::jsonb ->> api_key_id::text)`;
}

/**
 * csvLine of a usage row, in SQL, CRLF included. Cells are joined with ||, each non-null text: concat_ws (or
 * 'text' || a number) looks up each argument's output function on every row, which cost three times the rest.
 */
export function csvLineSql(keyNames: Map<string, string>) {
  const cells = [
    TS,
    cellSql("request_id"),
    "COALESCE(api_key_id::text, '')",
    `COALESCE(${keyCellSql(keyNames, csvCell)}, '')`,
    cellSql("model"),
    cellSql("protocol"),
    "status::text",
    cellSql("error_code"),
    ...TOKENS.map((t) => `${t}::text`),
    "(prompt_tokens::bigint + completion_tokens)::text",
    csvMoney("cost_micro"),
    ...PRICES.map((p) => `COALESCE(${csvMoney(p)}, '')`),
    bool("estimated"),
    cellSql("end_user"),
    listCellSql("tags"),
    listCellSql("dropped"),
    "latency_ms::text",
    "COALESCE(ttft_ms::text, '')",
    bool("stream"),
  ];
  return `${cells.map((c) => `(${c})`).join(" || ',' || ")} || chr(13) || chr(10)`;
}

const json = (x: string) => `COALESCE(to_json(${x})::text, 'null')`;
const jsonList = (col: string) => `COALESCE(array_to_json(${col})::text, '[]')`;

/** jsonLine of a usage row, in SQL, LF included: toRecord's fields in its order, as JSON.stringify writes them. */
export function jsonLineSql(keyNames: Map<string, string>) {
  const fields: [string, string][] = [
    ["started_at", `'"' || ${TS} || '"'`],
    ["request_id", json("request_id")],
    ["api_key_id", `COALESCE('"' || api_key_id::text || '"', 'null')`],
    ["api_key_name", `COALESCE(${keyCellSql(keyNames, (n) => JSON.stringify(n))}, 'null')`],
    ["model", json("model")],
    ["protocol", json("protocol")],
    ["status", "status::text"],
    ["error_code", json("error_code")],
    ...TOKENS.map((t): [string, string] => [t, `${t}::text`]),
    ["total_tokens", "(prompt_tokens::bigint + completion_tokens)::text"],
    ["amount", `'"' || ${units("cost_micro")} || '"'`],
    ...PRICES.map((p): [string, string] => [p, `COALESCE('"' || ${units(p)} || '"', 'null')`]),
    ["estimated", bool("estimated")],
    ["end_user", json("end_user")],
    ["tags", jsonList("tags")],
    ["dropped", jsonList("dropped")],
    ["latency_ms", "latency_ms::text"],
    ["ttft_ms", "COALESCE(ttft_ms::text, 'null')"],
    ["stream", bool("stream")],
  ];
  return `'{' || ${fields.map(([k, v], i) => `'${i ? "," : ""}"${k}":' || ${v}`).join(" || ")} || '}' || chr(10)`;
}
