import { readFileSync, watch } from "node:fs";

// Calendar periods for budgets: a day, an ISO week (Monday to Monday) or a month, each starting at local
// midnight in the account's time zone. The data plane (enforcement), the control plane's settlement (which
// period a call's spend lands in) and its snapshot (the current period's settled spend) all use this one
// module, so they agree on every boundary, DST days included.

export const budgetPeriods = ["day", "week", "month"] as const;
export type BudgetPeriod = (typeof budgetPeriods)[number];

/** [start, end) in epoch milliseconds. */
export interface PeriodBounds {
  start: number;
  end: number;
}

/** What the period is called in messages ("daily budget"). */
export const periodAdjective: Record<BudgetPeriod, string> = { day: "daily", week: "weekly", month: "monthly" };

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** Whether the runtime knows the IANA zone name (e.g. "Europe/Berlin", "UTC"). */
export function isTimeZone(name: string): boolean {
  if (name.length === 0 || name.length > 64) return false;
  try {
    formatFor(name);
    return true;
  } catch {
    return false;
  }
}

interface LocalTime {
  y: number;
  m: number; // 1-12
  d: number;
  wallMs: number; // the local wall-clock time read as if it were UTC
}

function local(timeZone: string, t: number): LocalTime {
  const p: Record<string, number> = {};
  for (const part of formatFor(timeZone).formatToParts(t))
    if (part.type !== "literal") p[part.type] = Number(part.value);
  const wallMs = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
  return { y: p.year!, m: p.month!, d: p.day!, wallMs };
}

/** The instant at which the zone's wall clock shows local midnight of (y, m, d); m may overflow (13 = next January). */
function midnight(timeZone: string, y: number, m: number, d: number): number {
  const wall = Date.UTC(y, m - 1, d);
  // offset = wall − instant; try the offset at the guess, then at the corrected instant (DST changes near it).
  let instant = wall - (local(timeZone, wall).wallMs - Math.floor(wall / 1000) * 1000);
  const offset2 = local(timeZone, instant).wallMs - Math.floor(instant / 1000) * 1000;
  instant = wall - offset2;
  return instant;
}

/** The period of `kind` that contains the instant t, in the time zone. */
export function periodBounds(timeZone: string, kind: BudgetPeriod, t: number): PeriodBounds {
  const l = local(timeZone, t);
  if (kind === "day") return { start: midnight(timeZone, l.y, l.m, l.d), end: midnight(timeZone, l.y, l.m, l.d + 1) };
  if (kind === "month") return { start: midnight(timeZone, l.y, l.m, 1), end: midnight(timeZone, l.y, l.m + 1, 1) };
  const weekday = (new Date(Date.UTC(l.y, l.m - 1, l.d)).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
  return { start: midnight(timeZone, l.y, l.m, l.d - weekday), end: midnight(timeZone, l.y, l.m, l.d - weekday + 7) };
}

/**
 * The current periods of one time zone, recomputed only when the clock leaves them: the request path pays
 * two comparisons, not a time-zone conversion.
 */
export class BudgetCalendar {
  private readonly cache = new Map<string, PeriodBounds>();
  constructor(readonly clock: () => number = Date.now) {}

  now(): number {
    return this.clock();
  }

  /** A wall-clock instant (a call's startedAt) on this calendar's clock: the same unless a test moved it. */
  fromWall(t: number): number {
    return t + (this.clock() - Date.now());
  }

  /** The period containing t (default: now). */
  bounds(timeZone: string, kind: BudgetPeriod, t: number = this.clock()): PeriodBounds {
    const id = `${kind} ${timeZone}`;
    const hit = this.cache.get(id);
    if (hit !== undefined && t >= hit.start && t < hit.end) return hit;
    const b = periodBounds(timeZone, kind, t);
    // Only the current period is kept: a look-up for another instant (a settling call from yesterday) must
    // not evict it for good, so the cache follows whichever period was asked last; both are cheap to redo.
    this.cache.set(id, b);
    return b;
  }
}

/**
 * The budget clock: the wall clock, moved by a test. With MODELGATE_TEST_CLOCK_FILE set (never in
 * production), the file holds an offset in milliseconds that every process of a test gateway adds to the
 * time it uses for budget periods and alerts; the test rewrites it to cross a period boundary instead of
 * waiting for midnight. The file is watched, so a change applies at once.
 */
export function budgetClockFromEnv(env: NodeJS.ProcessEnv = process.env): () => number {
  // Read on first use rather than at construction, so a module-level calendar follows the environment its
  // process (or test) set up before the first budget decision.
  let clock: (() => number) | null = null;
  return () => (clock ??= testClock(env))();
}

function testClock(env: NodeJS.ProcessEnv): () => number {
  const file = env.MODELGATE_TEST_CLOCK_FILE;
  if (!file) return Date.now;
  if (env.NODE_ENV === "production")
    throw new Error("MODELGATE_TEST_CLOCK_FILE is for tests; it is refused in production");
  const read = (): number => {
    try {
      const n = Number(readFileSync(file, "utf8").trim() || "0");
      return Number.isFinite(n) ? n : 0;
    } catch {
      return 0;
    }
  };
  let offset = read();
  try {
    watch(file, { persistent: false }, () => {
      offset = read();
    });
  } catch {
    // no such file: offset 0
  }
  return () => Date.now() + offset;
}
