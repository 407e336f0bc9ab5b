// Display helpers. Amounts arrive as exact decimal text and are only re-grouped for display, never parsed
// into floats for arithmetic.

export function formatAmount(value: string | null | undefined, currency?: string): string {
  if (value === null || value === undefined || value === "") return "—";
  const negative = value.startsWith("-");
  const [whole = "0", frac = ""] = value.replace(/^[-+]/, "").split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const decimals = frac.length === 0 ? "00" : frac.length === 1 ? `${frac}0` : frac.replace(/0+$/, "").padEnd(2, "0");
  const text = `${negative ? "−" : ""}${grouped}.${decimals}`;
  return currency ? `${text} ${currency}` : text;
}

const numberFormat = new Intl.NumberFormat();
export const formatNumber = (n: number | null | undefined): string =>
  n === null || n === undefined ? "—" : numberFormat.format(n);

export function formatCompact(n: number): string {
  return new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 }).format(n);
}

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function formatDateTimeSeconds(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return "—";
  return new Date(iso).toLocaleDateString(undefined, { dateStyle: "medium" });
}

/** A `datetime-local` input value (local time, no zone) for an ISO instant. */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The ISO instant for a `datetime-local` or `date` input value, read in the browser's time zone. */
export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const d = new Date(value.length === 10 ? `${value}T00:00` : value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export const browserTimeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
