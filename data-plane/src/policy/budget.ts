import type { AccountSnapshot, BudgetsSnapshot } from "../contract/snapshot.ts";
import { BudgetCalendar, budgetPeriods, periodAdjective, type BudgetPeriod } from "../billing/periods.ts";
import { GatewayError } from "../errors.ts";

// Budgets: spend limits per calendar period (day, ISO week, month in the account's time zone), per key and
// per account, beside the key's lifetime quota. Enforced from the same numbers as the quota: the snapshot's
// settled spend in the period plus the unsettled spend of the running counters (billing/spend.ts) and the
// reservations of the calls in flight (billing/reservation.ts), so the overrun bound is the quota's.
//
// Unsettled spend has no period: it is the last second or so of calls, counted in the current period. Right
// after a reset it may still hold calls from the end of the previous period; they count against the new one
// until they settle (under a second), which errs on the safe side.

interface CompiledBudget {
  period: BudgetPeriod;
  limit: bigint;
  start: number;
  end: number;
  spent: bigint;
}

const compiled = new WeakMap<BudgetsSnapshot, CompiledBudget[]>();

function compile(budgets: BudgetsSnapshot): CompiledBudget[] {
  let c = compiled.get(budgets);
  if (c === undefined) {
    c = [];
    for (const period of budgetPeriods) {
      const b = budgets[period];
      if (b === undefined) continue;
      const start = Date.parse(b.start);
      const end = Date.parse(b.end);
      // An unreadable period is taken as current (its settled spend counts): fail closed.
      c.push({
        period,
        limit: BigInt(b.limit),
        start: Number.isNaN(start) ? -Infinity : start,
        end: Number.isNaN(end) ? Infinity : end,
        spent: BigInt(b.spent),
      });
    }
    compiled.set(budgets, c);
  }
  return c;
}

/** The default calendar: the wall clock. The data plane passes its own (a test may move its clock). */
export const wallCalendar = new BudgetCalendar();

function formatMicro(micro: bigint): string {
  const whole = micro / 1_000_000n;
  const frac = (micro % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/**
 * What the budgets leave of their periods' limits beyond the settled spend (the smallest; negative once
 * one is overrun), as checkBudgets counts it; null without budgets. For reservations (billing/reservation.ts).
 */
export function budgetRoom(budgets: BudgetsSnapshot | undefined, calendar: BudgetCalendar): bigint | null {
  if (budgets === undefined) return null;
  const t = calendar.now();
  let room: bigint | null = null;
  for (const b of compile(budgets)) {
    const left = b.limit - (t < b.end ? b.spent : 0n);
    if (room === null || left < room) room = left;
  }
  return room;
}

/**
 * The first budget of `budgets` that `unsettled` more spend exhausts, as the refusal to answer with; null when
 * every period has something left. `who` names the subject in the message ("This API key", "The account").
 */
export function checkBudgets(
  budgets: BudgetsSnapshot | undefined,
  unsettled: bigint,
  account: AccountSnapshot,
  calendar: BudgetCalendar,
  who: string,
): GatewayError | null {
  if (budgets === undefined) return null;
  const list = compile(budgets);
  if (list.length === 0) return null;
  const t = calendar.now();
  for (const b of list) {
    // Past the snapshot's period: a new period has begun, and nothing of it has settled yet.
    const settled = t < b.end ? b.spent : 0n;
    if (settled + unsettled < b.limit) continue;
    const timeZone = account.timeZone ?? "UTC";
    const resetsAt = t < b.end ? b.end : calendar.bounds(timeZone, b.period, t).end;
    return new GatewayError(
      "rate_limit",
      "budget_exceeded",
      `${who} has used up its ${periodAdjective[b.period]} budget of ${formatMicro(b.limit)}; it resets at ${new Date(resetsAt).toISOString()} (midnight ${timeZone}).`,
      null,
      // Waiting does help here, but hours, not seconds: SDKs must not retry on their own.
      { "x-should-retry": "false", "x-modelgate-budget-resets-at": new Date(resetsAt).toISOString() },
    );
  }
  return null;
}
