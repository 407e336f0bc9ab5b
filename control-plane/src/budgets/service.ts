import { type BudgetPeriod, budgetPeriods, isTimeZone } from "@modelgate/data-plane";
import { audit } from "../audit/record.ts";
import type { Account, ApiKey } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { badInput, forbidden, notFound } from "../services/errors.ts";
import { formatAmount } from "../services/money.ts";
import { controlCalendar } from "./calendar.ts";
import { type BudgetColumns, type BudgetState, currentBudgets } from "./snapshot.ts";

// Budgets: spend limits per calendar period (day, ISO week, month in the account's time zone) on an account
// and on its keys. The operator may cap what the account's owners set (per period); owners set budgets within
// the caps, operators anywhere. Enforcement is the data plane's (policy/budget.ts), from the snapshot.

/** Per period: a new limit (micro-units), null to remove it, absent to leave it. */
export type BudgetChange = Partial<Record<BudgetPeriod, bigint | null>>;

const column = { day: "budgetDayMicro", week: "budgetWeekMicro", month: "budgetMonthMicro" } as const;
const capColumn = { day: "budgetDayCapMicro", week: "budgetWeekCapMicro", month: "budgetMonthCapMicro" } as const;
const label = { day: "daily", week: "weekly", month: "monthly" } as const;

export const capOf = (a: Account, period: BudgetPeriod): bigint | null => a[capColumn[period]];

function checkPositive(change: BudgetChange): void {
  for (const p of budgetPeriods) {
    const v = change[p];
    if (v !== undefined && v !== null && v <= 0n) throw badInput(`the ${label[p]} budget must be positive`, label[p]);
  }
}

/** An owner's change within the operator's caps: no removing a capped budget, no value above its cap. */
function checkWithinCaps(account: Account, change: BudgetChange): void {
  for (const p of budgetPeriods) {
    const cap = capOf(account, p);
    const v = change[p];
    if (cap === null || v === undefined) continue;
    if (v === null || v > cap) throw forbidden(`the operator caps the ${label[p]} budget at ${formatAmount(cap)}`);
  }
}

const data = (change: BudgetChange) =>
  Object.fromEntries(budgetPeriods.filter((p) => change[p] !== undefined).map((p) => [column[p], change[p]]));
/** The budget columns of a row, for the audit log's before and after. */
const pick = (row: Record<string, unknown>, cols: Record<string, string>) =>
  Object.fromEntries(Object.values(cols).map((c) => [c, row[c]]));

export async function setAccountBudgets(
  ctx: ServiceContext,
  accountId: string,
  change: BudgetChange,
  actor: { operator: boolean },
): Promise<Account> {
  checkPositive(change);
  const account = await ctx.prisma.account.findUnique({ where: { id: accountId } });
  if (!account) throw notFound("account");
  if (!actor.operator) checkWithinCaps(account, change);
  const row = await ctx.prisma.$transaction(async (tx) => {
    const after = await tx.account.update({ where: { id: accountId }, data: data(change) });
    await audit(tx, ctx.actor, {
      action: "account.budgets",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before: pick(account, column),
      after: pick(after, column),
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function setKeyBudgets(
  ctx: ServiceContext,
  keyId: string,
  change: BudgetChange,
  actor: { operator: boolean },
): Promise<ApiKey> {
  checkPositive(change);
  const key = await ctx.prisma.apiKey.findUnique({ where: { id: keyId }, include: { account: true } });
  if (!key) throw notFound("API key");
  if (key.status === "revoked") throw badInput("a revoked key cannot be changed");
  if (!actor.operator) {
    // A key's budget may be left unset under a cap: the account's budget (never above the cap) still holds.
    const bounded = Object.fromEntries(
      budgetPeriods.filter((p) => change[p] !== null).map((p) => [p, change[p]]),
    ) as BudgetChange;
    checkWithinCaps(key.account, bounded);
  }
  const row = await ctx.prisma.$transaction(async (tx) => {
    const after = await tx.apiKey.update({ where: { id: keyId }, data: data(change) });
    await audit(tx, ctx.actor, {
      action: "api_key.budgets",
      subjectType: "api_key",
      subjectId: keyId,
      accountId: key.accountId,
      before: pick(key, column),
      after: pick(after, column),
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

/**
 * Operators: the ceilings of what owners may set. A new cap lowers the account's budget (and its keys') to it
 * where they were higher, and gives the account a budget of the cap where it had none, in one transaction.
 */
export async function setBudgetCaps(ctx: ServiceContext, accountId: string, change: BudgetChange): Promise<Account> {
  checkPositive(change);
  const account = await ctx.prisma.$transaction(async (tx) => {
    const a = await tx.account.findUnique({ where: { id: accountId } });
    if (!a) throw notFound("account");
    const update: Record<string, bigint | null> = {};
    for (const p of budgetPeriods) {
      const cap = change[p];
      if (cap === undefined) continue;
      update[capColumn[p]] = cap;
      if (cap === null) continue;
      const current = a[column[p]];
      if (current === null || current > cap) update[column[p]] = cap;
      await tx.apiKey.updateMany({ where: { accountId, [column[p]]: { gt: cap } }, data: { [column[p]]: cap } });
    }
    const after = await tx.account.update({ where: { id: accountId }, data: update });
    const cols = { ...column, ...capColumn };
    await audit(tx, ctx.actor, {
      action: "account.budget_caps",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before: pick(a, cols),
      after: pick(after, cols),
    });
    return after;
  });
  ctx.snapshotChanged();
  return account;
}

export async function setTimeZone(ctx: ServiceContext, accountId: string, timeZone: string): Promise<Account> {
  const tz = timeZone.trim();
  if (!isTimeZone(tz))
    throw badInput(
      `unknown time zone ${JSON.stringify(tz.slice(0, 64))}; use an IANA name such as Europe/Berlin or UTC`,
      "timeZone",
    );
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.account.findUnique({ where: { id: accountId }, select: { timeZone: true } });
    if (!before) throw notFound("account");
    const after = await tx.account.update({ where: { id: accountId }, data: { timeZone: tz } });
    await audit(tx, ctx.actor, {
      action: "account.time_zone",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before,
      after: { timeZone: after.timeZone },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

/** The budgets of an account (keyId omitted) or a key in their current periods, with settled spend. */
export async function budgetsOf(
  ctx: ServiceContext,
  account: Pick<Account, "id" | "timeZone">,
  subject: BudgetColumns & { id: string },
  keyId = "",
): Promise<BudgetState[]> {
  const states = await currentBudgets(
    ctx.prisma,
    [{ id: subject.id, accountId: account.id, keyId, row: subject }],
    new Map([[account.id, account.timeZone]]),
    controlCalendar,
  );
  return states.get(subject.id) ?? [];
}

/** A budget as shown to people: limit, spent, what is left, and when the period resets. */
export const budgetView = (b: BudgetState) => ({
  period: b.period,
  limit: formatAmount(b.limit),
  spent: formatAmount(b.spent),
  remaining: formatAmount(b.limit > b.spent ? b.limit - b.spent : 0n),
  startsAt: b.start.toISOString(),
  resetsAt: b.end.toISOString(),
});
