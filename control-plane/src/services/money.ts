// Money is integer micro-units (1 unit = 1_000_000). Amounts typed by people ("12.5") are parsed from their
// decimal text, never through a float, so 0.1 + 0.2 problems cannot reach a wallet.

export const MICRO = 1_000_000n;

const decimal = /^(-)?(\d+)(?:\.(\d+))?$/;

/** "12.5" → 12_500_000n. More than six decimals is an error rather than a silent rounding. */
export function parseAmount(text: string | number): bigint {
  const s = typeof text === "number" ? numberToPlainString(text) : text.trim();
  const m = decimal.exec(s);
  if (!m) throw new Error(`not an amount: ${JSON.stringify(text)}`);
  const [, sign, whole, frac = ""] = m;
  if (frac.length > 6) throw new Error(`amount ${s} has more than 6 decimals`);
  const micro = BigInt(whole!) * MICRO + BigInt(frac.padEnd(6, "0"));
  return sign ? -micro : micro;
}

/** 12_500_000n → "12.5" (trailing zeros trimmed, at least one decimal kept off when whole). */
export function formatAmount(micro: bigint): string {
  const neg = micro < 0n;
  const abs = neg ? -micro : micro;
  const whole = abs / MICRO;
  const frac = (abs % MICRO).toString().padStart(6, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/** Config prices are numbers per 1M tokens (0.15); their shortest decimal text is what the operator wrote. */
function numberToPlainString(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`not an amount: ${n}`);
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(6).replace(/\.?0+$/, "");
}
