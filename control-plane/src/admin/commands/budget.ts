import { z } from "zod";
import {
  budgetsOf,
  budgetView,
  setAccountBudgets,
  setBudgetCaps,
  setKeyBudgets,
  type BudgetChange,
} from "../../budgets/service.ts";
import { resolveAccount } from "../../services/accounts.ts";
import type { ServiceContext } from "../../services/context.ts";
import { formatAmount } from "../../services/money.ts";
import { accountArg, amountOrNone, keyIdArg } from "../args.ts";
import { command, UsageError } from "../command.ts";

// Budgets: spend limits per calendar period (account or key) and the caps owners may set them up to.

const periods = { daily: amountOrNone.optional(), weekly: amountOrNone.optional(), monthly: amountOrNone.optional() };
const change = (a: { daily?: bigint | null; weekly?: bigint | null; monthly?: bigint | null }): BudgetChange => ({
  day: a.daily,
  week: a.weekly,
  month: a.monthly,
});

/** The key's id when it belongs to the account (a key of another account is "not found", as in the API). */
async function keyOf(ctx: ServiceContext, accountId: string, keyId: string): Promise<string> {
  const key = await ctx.prisma.apiKey.findFirst({ where: { id: keyId, accountId }, select: { id: true } });
  if (!key) throw new UsageError(`the account has no key ${keyId}`);
  return key.id;
}

/** Budgets with what is left, of the account or one of its keys. */
async function showBudgets(ctx: ServiceContext, accountId: string, keyId?: string) {
  const account = await ctx.prisma.account.findUniqueOrThrow({ where: { id: accountId } });
  const subject = keyId === undefined ? account : await ctx.prisma.apiKey.findUniqueOrThrow({ where: { id: keyId } });
  return {
    account: account.name,
    key: keyId ?? null,
    timeZone: account.timeZone,
    budgets: (await budgetsOf(ctx, account, subject, keyId ?? "")).map(budgetView),
  };
}

const cap = (m: bigint | null) => (m === null ? null : formatAmount(m));

export const budgetCommands = {
  "budget set": command({
    usage: "--account NAME_OR_ID [--key ID] [--daily AMOUNT|none] [--weekly AMOUNT|none] [--monthly AMOUNT|none]",
    note: "spend limits per calendar period in the account's time zone; none removes one",
    args: z.object({ account: accountArg, key: keyIdArg.optional(), ...periods }),
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      if (a.key === undefined) await setAccountBudgets(ctx, account.id, change(a), { operator: true });
      else await setKeyBudgets(ctx, await keyOf(ctx, account.id, a.key), change(a), { operator: true });
      return showBudgets(ctx, account.id, a.key);
    },
  }),
  "budget caps": command({
    usage: "--account NAME_OR_ID [--daily AMOUNT|none] [--weekly AMOUNT|none] [--monthly AMOUNT|none]",
    note: "ceilings for what the account's owners may set",
    args: z.object({ account: accountArg, ...periods }),
    run: async (ctx, a) => {
      const account = await setBudgetCaps(ctx, (await resolveAccount(ctx, a.account)).id, change(a));
      return {
        ...(await showBudgets(ctx, account.id)),
        caps: {
          daily: cap(account.budgetDayCapMicro),
          weekly: cap(account.budgetWeekCapMicro),
          monthly: cap(account.budgetMonthCapMicro),
        },
      };
    },
  }),
  "budget show": command({
    usage: "--account NAME_OR_ID [--key ID]",
    args: z.object({ account: accountArg, key: keyIdArg.optional() }),
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      if (a.key !== undefined) await keyOf(ctx, account.id, a.key);
      return showBudgets(ctx, account.id, a.key);
    },
  }),
};
