/**
 * A whole-number environment variable of the control plane's settings (settings.ts): `fallback` when unset or
 * blank, else a whole number of at least `min`, or an error that names the variable, its unit (and `note`, a
 * word on special values), the minimum when above 0, and what was given.
 */
export function wholeNumberEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  opts: { unit: string; min?: number; note?: string },
): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const min = opts.min ?? 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new Error(
      `${name} must be a whole number of ${opts.unit}${min > 0 ? `, at least ${min}` : ""}${opts.note ? ` (${opts.note})` : ""}, not '${raw}'`,
    );
  return n;
}
