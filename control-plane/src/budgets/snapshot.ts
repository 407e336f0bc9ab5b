import { type BudgetCalendar, type BudgetPeriod, budgetPeriods } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";

/** The three budget columns of an account or a key, by period. */
export interface BudgetColumns {
  budgetDayMicro: bigint | null;
  budgetWeekMicro: bigint | null;
  budgetMonthMicro: bigint | null;
}

export const limitOf = (row: BudgetColumns, period: BudgetPeriod): bigint | null =>
  period === "day" ? row.budgetDayMicro : period === "week" ? row.budgetWeekMicro : row.budgetMonthMicro;

const hasBudget = (row: BudgetColumns) =>
  row.budgetDayMicro !== null || row.budgetWeekMicro !== null || row.budgetMonthMicro !== null;

export interface BudgetState {
  period: BudgetPeriod;
  limit: bigint;
  start: Date;
  end: Date;
  /** settled spend in the period */
  spent: bigint;
}

type Budgets = Partial<Record<BudgetPeriod, { limit: string; start: string; end: string; spent: string }>>;

/**
 * The current period's budget and settled spend of every account and key that has a budget, keyed by account
 * or key id, for the snapshot. Only subjects with a budget are read, so the snapshot of a gateway without
 * budgets costs nothing more.
 */
export async function budgetSnapshots(
  prisma: Db,
  accounts: (BudgetColumns & { id: string; timeZone: string })[],
  keys: (BudgetColumns & { id: string; accountId: string; status: string })[],
  calendar: BudgetCalendar,
): Promise<Map<string, Budgets>> {
  const out = new Map<string, Budgets>();
  const zone = new Map(accounts.map((a) => [a.id, a.timeZone]));
  const subjects: { id: string; accountId: string; keyId: string; row: BudgetColumns }[] = [];
  for (const a of accounts) if (hasBudget(a)) subjects.push({ id: a.id, accountId: a.id, keyId: "", row: a });
  for (const k of keys)
    if (k.status === "active" && hasBudget(k)) subjects.push({ id: k.id, accountId: k.accountId, keyId: k.id, row: k });
  if (subjects.length === 0) return out;
  const states = await currentBudgets(prisma, subjects, zone, calendar);
  for (const s of subjects) {
    const b: Budgets = {};
    for (const st of states.get(s.id) ?? []) {
      b[st.period] = {
        limit: st.limit.toString(),
        start: st.start.toISOString(),
        end: st.end.toISOString(),
        spent: st.spent.toString(),
      };
    }
    out.set(s.id, b);
  }
  return out;
}

/**
 * Each subject's budgets in their current periods with the spend settled in them (one query for all). A
 * subject is an account (keyId '') or a key; `id` is what the result is keyed by.
 */
export async function currentBudgets(
  prisma: Db,
  subjects: { id: string; accountId: string; keyId: string; row: BudgetColumns }[],
  zone: Map<string, string>,
  calendar: BudgetCalendar,
  now = calendar.now(),
): Promise<Map<string, BudgetState[]>> {
  const out = new Map<string, BudgetState[]>();
  let earliest = Infinity;
  const wanted: { id: string; accountId: string; keyId: string; state: BudgetState }[] = [];
  for (const s of subjects) {
    const tz = zone.get(s.accountId) ?? "UTC";
    const list: BudgetState[] = [];
    for (const period of budgetPeriods) {
      const limit = limitOf(s.row, period);
      if (limit === null) continue;
      const b = calendar.bounds(tz, period, now);
      if (b.start < earliest) earliest = b.start;
      const state = { period, limit, start: new Date(b.start), end: new Date(b.end), spent: 0n };
      list.push(state);
      wanted.push({ id: s.id, accountId: s.accountId, keyId: s.keyId, state });
    }
    out.set(s.id, list);
  }
  if (wanted.length === 0) return out;
  const rows = await prisma.spendPeriod.findMany({
    where: {
      accountId: { in: [...new Set(subjects.map((s) => s.accountId))] },
      periodStart: { gte: new Date(earliest) },
    },
  });
  const spent = new Map(
    rows.map((r) => [`${r.accountId} ${r.keyId} ${r.period} ${r.periodStart.getTime()}`, r.spentMicro]),
  );
  for (const w of wanted)
    w.state.spent = spent.get(`${w.accountId} ${w.keyId} ${w.state.period} ${w.state.start.getTime()}`) ?? 0n;
  return out;
}
