// Numeric settings from the environment, checked when the process starts: a value that is not what the
// variable accepts stops the start with a message naming the variable, instead of NaN running silently
// (MODELGATE_RESPONSES_TTL_S=abc made every stored call a 500 in distributed mode, and records that never
// expired in embedded mode). The control plane's settings use the same helper (control-plane/src/main/env.ts).

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
