// Money is integer micro-units (1 unit = 1_000_000). Amounts typed by people ("12.5") are parsed from their
// decimal text, never through a float, so 0.1 + 0.2 problems cannot reach a wallet.

export const MICRO = 1_000_000n;

const decimal = /^(-)?(\d+)(?:\.(\d+))?$/;

/**
 * The largest amount accepted anywhere: a trillion units. Its micro-units (10^18) fit a BIGINT column with room
 * for sums (2^63 ≈ 9.2 × 10^18), so no amount a person types can overflow the database.
 */
export const MAX_AMOUNT_MICRO = 10n ** 18n;

/** A malformed or out-of-range amount: the caller's mistake (BAD_USER_INPUT), never a server error. */
export class AmountError extends Error {}

/** "12.5" → 12_500_000n. More than six decimals is an error rather than a silent rounding. */
export function parseAmount(text: string | number): bigint {
  const s = typeof text === "number" ? numberToPlainString(text) : text.trim();
  const m = s.length <= 40 ? decimal.exec(s) : null;
  if (!m) throw new AmountError(`not an amount: ${JSON.stringify(String(text).slice(0, 40))}`);
  const [, sign, whole, frac = ""] = m;
  if (frac.length > 6) throw new AmountError(`amount ${s} has more than 6 decimals`);
  const micro = BigInt(whole!) * MICRO + BigInt(frac.padEnd(6, "0"));
  if (micro > MAX_AMOUNT_MICRO)
    throw new AmountError(`amount ${s} is out of range (at most ${formatAmount(MAX_AMOUNT_MICRO)})`);
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

/**
 * Micro-units given as exact decimal text, possibly fractional (a usage row's unit price, "3750000.25"), as
 * units: "3.75000025". Decimal shifting on the text, never through a float.
 */
export function formatMicroText(text: string): string {
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) throw new AmountError(`not an amount: ${JSON.stringify(text.slice(0, 40))}`);
  const [, sign, whole, frac = ""] = m;
  const digits = (whole! + frac).replace(/^0+(?=\d)/, "");
  const scale = 6 + frac.length;
  const padded = digits.padStart(scale + 1, "0");
  const intPart = padded.slice(0, padded.length - scale).replace(/^0+(?=\d)/, "");
  const fracPart = padded.slice(padded.length - scale).replace(/0+$/, "");
  const out = fracPart ? `${intPart}.${fracPart}` : intPart;
  return sign && out !== "0" ? `-${out}` : out;
}

/** Config prices are numbers per 1M tokens (0.15); their shortest decimal text is what the operator wrote. */
function numberToPlainString(n: number): string {
  if (!Number.isFinite(n)) throw new AmountError(`not an amount: ${n}`);
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(6).replace(/\.?0+$/, "");
}
