// Constants and small helpers used by more than one protocol translator.

import { GatewayError, type GatewayErrorKind } from "../errors.ts";
import type { ImageSource, ReasoningConfig, ReasoningEffort, ResponseFormat, ToolMessage } from "./canonical.ts";

/**
 * Anthropic requires max_tokens; OpenAI and Gemini clients may omit it. 4096 is what Anthropic's own
 * examples use and is accepted by every current Claude model.
 */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

/**
 * reasoning_effort → thinking budget (tokens). 1024 is Anthropic's minimum budget; 24576 is Gemini 2.5
 * Flash's maximum thinking budget, so "high" is valid on every upstream.
 */
export const REASONING_BUDGET: Record<ReasoningEffort, number> = {
  minimal: 1024,
  low: 1024,
  medium: 8192,
  high: 24576,
};

/** The reverse mapping, for an OpenAI upstream asked for a token budget: the smallest effort that covers it. */
export const effortOfBudget = (budget: number): ReasoningEffort =>
  budget <= REASONING_BUDGET.low ? "low" : budget <= REASONING_BUDGET.medium ? "medium" : "high";

/**
 * The effort to ask of a vendor that takes one (OpenAI's reasoning_effort, Responses' reasoning.effort): none
 * for reasoning off or left to the model, which is the model's default (an effort sent to a model without
 * reasoning is the vendor's 400, so the builders pass what Translation.reasoning left).
 */
export const effortOut = (r: ReasoningConfig | undefined): ReasoningEffort | undefined =>
  r?.enabled ? (r.effort ?? (r.budgetTokens === undefined ? undefined : effortOfBudget(r.budgetTokens))) : undefined;

/** A JSON-schema answer format as OpenAI's two APIs carry it (Chat Completions' json_schema, Responses' text.format). */
export interface JsonSchemaFormat {
  name: string;
  schema?: Record<string, unknown>;
  description?: string | undefined;
  strict?: boolean | null | undefined;
}

/** The canonical form of an OpenAI JSON-schema format (a null strict is none). */
export const jsonSchemaFormatOf = (js: JsonSchemaFormat): ResponseFormat => ({
  type: "json_schema",
  name: js.name,
  schema: js.schema ?? {},
  ...(js.strict != null ? { strict: js.strict } : {}),
  ...(js.description !== undefined ? { description: js.description } : {}),
});

/** A canonical JSON-schema format in OpenAI's terms. */
export const jsonSchemaFormatOut = (rf: Extract<ResponseFormat, { type: "json_schema" }>): Record<string, unknown> => ({
  name: rf.name,
  ...(rf.description !== undefined ? { description: rf.description } : {}),
  schema: rf.schema,
  ...(rf.strict !== undefined ? { strict: rf.strict } : {}),
});

/** The budget to send to a vendor that wants tokens; undefined means "let the model decide". */
export const budgetOf = (r: ReasoningConfig): number | undefined =>
  r.budgetTokens ?? (r.effort ? REASONING_BUDGET[r.effort] : undefined);

/**
 * A mid-conversation system instruction as text in a user turn, for protocols without a system turn (Anthropic,
 * Gemini): delimited so that it reads as an instruction, not as something the user said.
 */
export const systemNote = (text: string): string => `<system>\n${text}\n</system>`;

export const invalid = (code: string, message: string, param: string | null = null): GatewayError =>
  new GatewayError("invalid_request", code, message, param);

/** A parameter the upstream protocol cannot honour and that would change the answer (translation.ts, kind refuse). */
export const unsupported = (param: string, upstream: string, detail = ""): GatewayError =>
  invalid(
    "unsupported_parameter",
    `'${param}' is not supported by this model's ${upstream} upstream${detail ? `: ${detail}` : ""}.`,
    param,
  );

/** Refuses a translation of a request that holds a parameter only the client's own protocol carries (embeddings). */
export function refuseUntranslatable(req: { untranslatable?: string[] }, upstream: string): void {
  const first = req.untranslatable?.[0];
  if (first !== undefined)
    throw unsupported(first, upstream, "only an upstream of the client's own protocol can honour it");
}

/**
 * The parameters of a client body, beyond those a parser translates, that only the client's protocol carries:
 * `refuse` names each one present (with a value other than its default) in the client's notation, and
 * translation.ts's table says what each becomes in a translation (dropped and named, or refused).
 */
export function untranslatableOf(
  body: Record<string, unknown>,
  refuse: Record<string, (v: unknown) => boolean>,
  prefix = "",
): string[] {
  const out: string[] = [];
  // for…in rather than Object.entries: this runs on every call and the entries array was pure garbage.
  for (const name in refuse) {
    const v = body[name];
    if (v !== undefined && v !== null && refuse[name]!(v)) out.push(prefix + name);
  }
  return out;
}

/** Any value but null/undefined changes the answer. */
export const always = (): boolean => true;

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** OpenAI carries inline images as data: URLs; the other protocols want media type and base64 apart. */
export function imageSourceOfUrl(url: string, detail?: string): ImageSource {
  const m = DATA_URL.exec(url);
  if (m) return { kind: "base64", mediaType: m[1] ?? "application/octet-stream", data: m[2] ?? "" };
  return detail === undefined ? { kind: "url", url } : { kind: "url", url, detail };
}

export const dataUrlOf = (mediaType: string, data: string): string => `data:${mediaType};base64,${data}`;

/** Tool arguments travel as JSON text in OpenAI and as objects elsewhere. */
export function parseArguments(args: string, param: string): Record<string, unknown> {
  if (args.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw invalid("invalid_value", "Tool call arguments must be a JSON object.", param);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw invalid("invalid_value", "Tool call arguments must be a JSON object.", param);
  }
  return parsed as Record<string, unknown>;
}

/** Lenient variant for upstream output: a model may emit broken JSON; keep the text rather than fail. */
export function parseArgumentsLenient(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args === "" ? "{}" : args);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  return { _raw: args };
}

/**
 * Gemini answers tool calls by name, not id. Resolve each tool message's name from the assistant call
 * it answers (OpenAI and Anthropic only carry the id).
 */
export function toolNameResolver(): {
  noteCall(id: string, name: string): void;
  nameOf(m: ToolMessage): string | undefined;
} {
  const names = new Map<string, string>();
  return {
    noteCall: (id, name) => void names.set(id, name),
    nameOf: (m) => m.name ?? names.get(m.toolCallId),
  };
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

// Upstream JSON is untrusted and loosely typed; these readers never throw.
export type Json = Record<string, unknown>;
export const obj = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * A token count in an upstream's usage report. Absent (undefined, or null where the vendor writes null for
 * "not counted") is 0 unless `required`; anything but a non-negative safe integer (10.5, -3, "12", NaN,
 * 2^53, an object) is NaN, which makes the whole report malformed (see usableUsage): billed counts are
 * integers the cost's BigInt arithmetic takes, never a credit, and a report the gateway cannot read is
 * treated as no report (the call is billed by estimate, flagged), not as a count of 0.
 */
export const count = (v: unknown, required = false): number =>
  v === undefined || v === null
    ? required
      ? NaN
      : 0
    : typeof v === "number" && Number.isSafeInteger(v) && v >= 0
      ? v
      : NaN;

/** Every count of a usage report is a non-negative safe integer (sums included): the report can be billed. */
export function usableUsage(u: {
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
  cacheWrite5mTokens?: number | undefined;
  cacheWrite1hTokens?: number | undefined;
}): boolean {
  const ok = (n: number | undefined) => n === undefined || (Number.isSafeInteger(n) && n >= 0);
  return (
    ok(u.promptTokens) &&
    ok(u.completionTokens) &&
    ok(u.reasoningTokens) &&
    ok(u.cachedTokens) &&
    ok(u.cacheWrite5mTokens) &&
    ok(u.cacheWrite1hTokens) &&
    Number.isSafeInteger(u.promptTokens + u.completionTokens)
  );
}

/** The gateway error kind an upstream HTTP status corresponds to, whatever the vendor called it. */
export function kindOfStatus(status: number): GatewayErrorKind {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request";
    case 401:
      return "authentication";
    case 402:
      return "payment_required";
    case 403:
      return "permission";
    case 404:
      return "not_found";
    case 413:
      return "too_large";
    case 429:
      return "rate_limit";
    case 408:
    case 504:
      return "timeout";
    case 503:
    case 529:
      return "unavailable";
    default:
      return status >= 500 ? "upstream" : "invalid_request";
  }
}

/** Parses an error body that may not be JSON at all (proxies answer HTML). */
export function parseJsonLoose(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

/** A mid-stream error carries a vendor type name but no HTTP status: classify it by name. */
export function kindOfErrorName(name: string | undefined): GatewayErrorKind {
  if (!name) return "upstream";
  if (name.includes("rate_limit") || name === "RESOURCE_EXHAUSTED") return "rate_limit";
  if (name.includes("overloaded") || name === "UNAVAILABLE") return "unavailable";
  if (name.includes("timeout") || name === "DEADLINE_EXCEEDED") return "timeout";
  if (name.includes("invalid_request") || name === "INVALID_ARGUMENT") return "invalid_request";
  if (name.includes("authentication") || name === "invalid_api_key" || name === "UNAUTHENTICATED")
    return "authentication";
  if (name.includes("permission") || name === "PERMISSION_DENIED") return "permission";
  if (name.includes("not_found") || name === "NOT_FOUND") return "not_found";
  return "upstream";
}

/** The error event a decoder emits for an upstream stream that failed or was cut short. */
export const upstreamStreamError = (kind: GatewayErrorKind, code: string, message: string): GatewayError =>
  new GatewayError(kind, code, message);
