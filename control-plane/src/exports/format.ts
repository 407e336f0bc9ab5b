import type { UsageLog } from "../generated/prisma/client.ts";
import { formatAmount, formatMicroText } from "../services/money.ts";

const price = (v: Price) => (v === null ? null : formatMicroText(v.toString()));

// One usage row → one CSV or JSONL line. Metadata only (no prompt or completion text exists to export).

export const COLUMNS = [
  "started_at",
  "request_id",
  "api_key_id",
  "api_key_name",
  "model",
  "protocol",
  "status",
  "error_code",
  "prompt_tokens",
  "completion_tokens",
  "reasoning_tokens",
  "cached_tokens",
  "input_tokens",
  "cache_write_5m_tokens",
  "cache_write_1h_tokens",
  "total_tokens",
  "amount",
  "input_price",
  "cached_input_price",
  "cache_write_5m_price",
  "cache_write_1h_price",
  "output_price",
  "estimated",
  "end_user",
  "tags",
  "dropped",
  "latency_ms",
  "ttft_ms",
  "stream",
] as const;

type Price = { toString(): string } | null;

/** The columns an export reads. Prices may be their decimal text (an export reads them as text: no object per cell). */
export type ExportRow = {
  inputPrice: Price;
  cachedInputPrice: Price;
  cacheWrite5mPrice: Price;
  cacheWrite1hPrice: Price;
  outputPrice: Price;
} & Pick<
  UsageLog,
  | "startedAt"
  | "requestId"
  | "apiKeyId"
  | "model"
  | "protocol"
  | "status"
  | "errorCode"
  | "promptTokens"
  | "completionTokens"
  | "reasoningTokens"
  | "cachedTokens"
  | "inputTokens"
  | "cacheWrite5mTokens"
  | "cacheWrite1hTokens"
  | "estimated"
  | "endUser"
  | "tags"
  | "dropped"
  | "costMicro"
  | "latencyMs"
  | "ttftMs"
  | "stream"
>;

export function toRecord(r: ExportRow, keyName: string | null) {
  return {
    started_at: r.startedAt.toISOString(),
    request_id: r.requestId,
    api_key_id: r.apiKeyId,
    api_key_name: keyName,
    model: r.model,
    protocol: r.protocol,
    status: r.status,
    error_code: r.errorCode,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    reasoning_tokens: r.reasoningTokens,
    cached_tokens: r.cachedTokens,
    input_tokens: r.inputTokens,
    cache_write_5m_tokens: r.cacheWrite5mTokens,
    cache_write_1h_tokens: r.cacheWrite1hTokens,
    total_tokens: r.promptTokens + r.completionTokens,
    amount: formatAmount(r.costMicro),
    // unit prices per 1M tokens, in the amount's unit; empty when the call was not billed
    input_price: price(r.inputPrice),
    cached_input_price: price(r.cachedInputPrice),
    cache_write_5m_price: price(r.cacheWrite5mPrice),
    cache_write_1h_price: price(r.cacheWrite1hPrice),
    output_price: price(r.outputPrice),
    estimated: r.estimated,
    end_user: r.endUser,
    tags: r.tags,
    // client parameters a translation left out (x-modelgate-dropped)
    dropped: r.dropped,
    latency_ms: r.latencyMs,
    ttft_ms: r.ttftMs,
    stream: r.stream,
  } satisfies Record<(typeof COLUMNS)[number], unknown>;
}

// Spreadsheet formula injection (OWASP "CSV Injection"): a cell a spreadsheet reads as a formula starts with
// = + - @ (or their full-width and small forms), possibly after spaces a spreadsheet trims (any Unicode space,
// NBSP, zero-width, control characters such as tab and CR). Such a cell gets a leading apostrophe. Because a
// file may be opened with another separator than ours (';' in many locales, or tab), a trigger right after a
// ',', ';', tab or line break inside the cell would start a cell of its own there: it gets the apostrophe too,
// after that separator. Model names, tags, end users and sign-in e-mails come from clients.
const SPACE = "\\s\\u0000-\\u001f\\u007f-\\u009f\\u180e\\u200b-\\u200d\\u2060\\ufeff";
const TRIGGER = "=+\\-@\\u2212\\ufe62\\ufe63\\ufe66\\ufe6b\\uff0b\\uff0d\\uff1d\\uff20";
const FORMULA_AT_START = new RegExp(`^[${SPACE}"]*[${TRIGGER}]`, "u");
const FORMULA_AFTER_SEPARATOR = new RegExp(`([,;\\t\\r\\n])(?=[${SPACE}"]*[${TRIGGER}])`, "gu");

// Any trigger at all: text without one (most cells) needs no further look.
const ANY_TRIGGER = new RegExp(`[${TRIGGER}]`, "u");

/** The text defused: an apostrophe before every place a spreadsheet could start a formula. */
export function defuseFormulas(s: string): string {
  if (!ANY_TRIGGER.test(s)) return s.length > 0 && (s[0] === "\t" || s[0] === "\r") ? `'${s}` : s;
  const inner = s.replace(FORMULA_AFTER_SEPARATOR, "$1'");
  return FORMULA_AT_START.test(inner) || /^[\t\r]/.test(inner) ? `'${inner}` : inner;
}

/**
 * One CSV cell: text (and a list, as JSON text) defused against formulas, then quoted (RFC 4180) when it holds
 * a quote, a line break or any separator a reader might use (',' ';' tab), so it stays one cell whichever of
 * them the file is opened with. Numbers and booleans are ours, and a negative number stays a number.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  // A list (tags) is one cell of JSON text: a tag may itself hold a comma or a space.
  let s = Array.isArray(value) ? JSON.stringify(value) : String(value);
  if (typeof value !== "number" && typeof value !== "bigint" && typeof value !== "boolean") s = defuseFormulas(s);
  return /[",;\t\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvHeader = () => `${COLUMNS.join(",")}\r\n`;
const text = (v: string | null) => (v === null ? "" : csvCell(v));
const num = (v: number | null) => (v === null ? "" : String(v));
const priceCell = (v: Price) => (v === null ? "" : csvCell(price(v)));

/**
 * One CSV line, in COLUMNS' order: the same cells as toRecord's through csvCell, written directly (an export
 * writes hundreds of thousands of lines a second: no record object and no cell array per row). Text from clients
 * goes through csvCell (defused, quoted); numbers, booleans, our ids and times are written as they are.
 */
export const csvLine = (r: ExportRow, keyName: string | null) =>
  `${r.startedAt.toISOString()},${text(r.requestId)},${r.apiKeyId ?? ""},${text(keyName)},${text(r.model)},${text(r.protocol)},${r.status},${text(r.errorCode)},${r.promptTokens},${r.completionTokens},${r.reasoningTokens},${r.cachedTokens},${r.inputTokens},${r.cacheWrite5mTokens},${r.cacheWrite1hTokens},${r.promptTokens + r.completionTokens},${csvCell(formatAmount(r.costMicro))},${priceCell(r.inputPrice)},${priceCell(r.cachedInputPrice)},${priceCell(r.cacheWrite5mPrice)},${priceCell(r.cacheWrite1hPrice)},${priceCell(r.outputPrice)},${r.estimated},${text(r.endUser)},${csvCell(r.tags)},${csvCell(r.dropped)},${r.latencyMs},${num(r.ttftMs)},${r.stream}\r\n`;
export const jsonLine = (r: ExportRow, keyName: string | null) => `${JSON.stringify(toRecord(r, keyName))}\n`;
