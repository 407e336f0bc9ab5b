import type { UsageLog } from "../generated/prisma/client.ts";
import { formatAmount } from "../services/money.ts";

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
  "total_tokens",
  "amount",
  "latency_ms",
  "ttft_ms",
  "stream",
] as const;

export type ExportRow = Pick<
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
    total_tokens: r.promptTokens + r.completionTokens,
    amount: formatAmount(r.costMicro),
    latency_ms: r.latencyMs,
    ttft_ms: r.ttftMs,
    stream: r.stream,
  } satisfies Record<(typeof COLUMNS)[number], unknown>;
}

/**
 * RFC 4180 quoting, plus a guard against spreadsheet formula injection: a text cell that starts with = + - @ or a
 * control character gets a leading apostrophe (model names come from clients).
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let s = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvHeader = () => `${COLUMNS.join(",")}\r\n`;
export const csvLine = (r: ExportRow, keyName: string | null) => {
  const rec = toRecord(r, keyName);
  return `${COLUMNS.map((c) => csvCell(rec[c])).join(",")}\r\n`;
};
export const jsonLine = (r: ExportRow, keyName: string | null) => `${JSON.stringify(toRecord(r, keyName))}\n`;
