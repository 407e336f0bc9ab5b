// Numeric settings from the environment, checked when the process starts: a value that is not what the
// variable accepts stops the start with a message naming the variable, instead of NaN running silently
// (MODELGATE_RESPONSES_TTL_S=abc made every stored call a 500 in distributed mode, and records that never
// expired in embedded mode). The control plane's settings use the same helper (control-plane/src/settings/settings.ts).

/**
 * A whole-number environment variable: `fallback` when unset or blank, else a whole number from `min`
 * (default 0) to `max` (default none), or an error that names the variable, its unit (and `note`, a word on
 * special values), the bounds, and what was given.
 */
export function wholeNumberEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  opts: { unit: string; min?: number; max?: number; note?: string },
): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const min = opts.min ?? 0;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  const n = Number(raw);
  if (!/^[+-]?\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    const bounds = opts.max !== undefined ? `, from ${min} to ${opts.max}` : min > 0 ? `, at least ${min}` : "";
    throw new Error(
      `${name} must be a whole number of ${opts.unit}${bounds}${opts.note ? ` (${opts.note})` : ""}, not '${raw}'`,
    );
  }
  return n;
}

/** A decimal environment variable from `min` to `max`: `fallback` when unset or blank, else checked likewise. */
export function numberEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  opts: { what: string; min: number; max: number },
): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < opts.min || n > opts.max)
    throw new Error(`${name} must be ${opts.what} from ${opts.min} to ${opts.max}, not '${raw}'`);
  return n;
}

type Plane = "data" | "control";
interface NumericSetting {
  name: string;
  /** the processes that read it (the embedded server reads both) */
  planes: Plane[];
  unit: string;
  min: number;
  max?: number;
  /** a decimal (a share), not a whole number */
  decimal?: boolean;
}

const both: Plane[] = ["data", "control"];
const data: Plane[] = ["data"];
const control: Plane[] = ["control"];

/**
 * Every numeric environment variable the processes read, with what it accepts. Checked once at start
 * (createDataPlaneOptions, readSettings) before anything listens, whichever module reads it later and however
 * it reads it. Those read through wholeNumberEnv where they are used are listed too, so this is the one list.
 */
export const NUMERIC_SETTINGS: readonly NumericSetting[] = [
  { name: "PORT", planes: both, unit: "port", min: 0, max: 65_535 },
  { name: "MODELGATE_MAX_BODY_BYTES", planes: both, unit: "bytes", min: 1024 },
  { name: "MODELGATE_UPSTREAM_MAX_ANSWER_BYTES", planes: data, unit: "bytes", min: 1 },
  { name: "MODELGATE_UPSTREAM_MAX_EVENT_BYTES", planes: data, unit: "bytes", min: 1 },
  { name: "MODELGATE_UPSTREAM_MAX_ANSWER_MS", planes: data, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_DRAIN_MS", planes: both, unit: "milliseconds", min: 0 },
  { name: "MODELGATE_LOG_SUMMARY_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_HEADERS_TIMEOUT_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_REQUEST_TIMEOUT_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_KEEPALIVE_TIMEOUT_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_SOCKET_IDLE_TIMEOUT_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_TIMEOUT_CHECK_MS", planes: both, unit: "milliseconds", min: 1 },
  { name: "OTEL_BSP_SCHEDULE_DELAY", planes: both, unit: "milliseconds", min: 0 },
  { name: "OTEL_BSP_MAX_QUEUE_SIZE", planes: both, unit: "spans", min: 1 },
  { name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", planes: both, unit: "spans", min: 1 },
  { name: "OTEL_BSP_EXPORT_TIMEOUT", planes: both, unit: "milliseconds", min: 1 },
  { name: "OTEL_TRACES_SAMPLER_ARG", planes: both, unit: "a sampling ratio", min: 0, max: 1, decimal: true },
  { name: "MODELGATE_MAX_JSON_DEPTH", planes: data, unit: "levels", min: 1 },
  { name: "MODELGATE_MAX_JSON_CONTAINERS", planes: data, unit: "objects and arrays", min: 1 },
  { name: "MODELGATE_BREAKER_FAILURES", planes: data, unit: "failures", min: 1 },
  { name: "MODELGATE_BREAKER_OPEN_MS", planes: data, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_BREAKER_MIN_ACCOUNTS", planes: data, unit: "accounts", min: 1 },
  { name: "MODELGATE_BREAKER_REPORT_MS", planes: data, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_KEY_STATE_POLL_MS", planes: data, unit: "milliseconds", min: 10 },
  { name: "MODELGATE_RETRY_BUDGET_PERCENT", planes: data, unit: "percent", min: 0 },
  { name: "MODELGATE_RETRY_BUDGET_MIN", planes: data, unit: "retries", min: 0 },
  { name: "MODELGATE_RETRY_ATTEMPTS", planes: data, unit: "attempts", min: 1 },
  { name: "MODELGATE_RETRY_BASE_MS", planes: data, unit: "milliseconds", min: 0 },
  { name: "MODELGATE_RESPONSES_TTL_S", planes: data, unit: "seconds", min: 1 },
  { name: "MODELGATE_RESPONSES_MAX_PER_ACCOUNT", planes: data, unit: "stored responses", min: 1 },
  { name: "MODELGATE_RESPONSES_MAX_BYTES_PER_ACCOUNT", planes: data, unit: "bytes", min: 1024 },
  { name: "MODELGATE_USAGE_RETAIN_MS", planes: data, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_USAGE_RETAIN_MB", planes: data, unit: "megabytes", min: 1 },
  { name: "MODELGATE_MAX_KEYS_PER_ACCOUNT", planes: control, unit: "keys", min: 1 },
  { name: "MODELGATE_EXPORTS_PER_ACCOUNT", planes: control, unit: "exports", min: 1 },
  { name: "MODELGATE_EXPORT_RETENTION_HOURS", planes: control, unit: "hours", min: 1 },
  { name: "MODELGATE_SPEND_PERIOD_RETENTION_DAYS", planes: control, unit: "days", min: 1 },
  { name: "MODELGATE_ALERT_RETENTION_DAYS", planes: control, unit: "days", min: 1 },
  { name: "MODELGATE_WEBHOOK_RETRY_MS", planes: control, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_WEBHOOK_ATTEMPTS", planes: control, unit: "attempts", min: 1 },
  { name: "MODELGATE_GRAPHQL_MAX_TOKENS", planes: control, unit: "tokens", min: 1 },
  { name: "MODELGATE_GRAPHQL_MAX_DEPTH", planes: control, unit: "levels", min: 1 },
  { name: "MODELGATE_GRAPHQL_MAX_ALIASES", planes: control, unit: "aliases", min: 0 },
  { name: "MODELGATE_GRAPHQL_MAX_DIRECTIVES", planes: control, unit: "directives", min: 0 },
  { name: "MODELGATE_GRAPHQL_MAX_COST", planes: control, unit: "cost units", min: 1 },
  { name: "MODELGATE_GRAPHQL_MAX_DB_COST", planes: control, unit: "cost units", min: 1 },
  { name: "MODELGATE_ALERTS_INTERVAL_MS", planes: control, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_ALERTS_BREAKER_MS", planes: control, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_REPUBLISH_MS", planes: control, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_SHUTDOWN_MS", planes: control, unit: "milliseconds", min: 0 },
  { name: "MODELGATE_KEY_REPORT_MS", planes: control, unit: "milliseconds", min: 1 },
  { name: "MODELGATE_SETTLE_INTERVAL_MS", planes: control, unit: "milliseconds", min: 0, max: 60_000 },
  { name: "MODELGATE_POLICY_FULL_LEASE_MS", planes: control, unit: "milliseconds", min: 1_000 },
  { name: "MODELGATE_POLICY_COMPACT_TOMBSTONES", planes: control, unit: "tombstones", min: 0 },
  { name: "MODELGATE_USAGE_SHARDS", planes: both, unit: "shards", min: 1, max: 256 },
  { name: "MODELGATE_USAGE_RETENTION_DAYS", planes: control, unit: "days", min: 0 },
  { name: "MODELGATE_AUDIT_RETENTION_DAYS", planes: control, unit: "days", min: 0 },
];

/** Throws, naming the variable and what it accepts, on the first numeric setting of `plane` that is not valid. */
export function checkNumericSettings(env: NodeJS.ProcessEnv, plane: Plane): void {
  for (const s of NUMERIC_SETTINGS) {
    if (!s.planes.includes(plane)) continue;
    if (s.decimal) numberEnv(env, s.name, s.min, { what: s.unit, min: s.min, max: s.max ?? Number.MAX_VALUE });
    else wholeNumberEnv(env, s.name, s.min, { unit: s.unit, min: s.min, max: s.max });
  }
}
