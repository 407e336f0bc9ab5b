import { type BudgetPeriod, budgetPeriods } from "@modelgate/data-plane";
import type { Account } from "../../generated/prisma/client.ts";
import {
  type BudgetChange,
  budgetsOf,
  capOf,
  setAccountBudgets,
  setBudgetCaps,
  setKeyBudgets,
  setTimeZone,
} from "../../budgets/service.ts";
import type { BudgetState } from "../../budgets/snapshot.ts";
import { notFound } from "../../services/errors.ts";
import { builder, isOperator } from "../builder.ts";
import { accountIdFor, amountArg, money } from "../common.ts";
import { AccountRef } from "./account.ts";
import { ApiKeyRef, keyFor } from "./api-key.ts";

// Budgets: spend limits per calendar period (day, ISO week, month in the account's time zone), on accounts and
// keys, with what is left; the operator's caps on what owners set; the account's time zone.

export const BudgetPeriodEnum = builder.enumType("BudgetPeriod", {
  description: "day, ISO week (from Monday) or month, each starting at local midnight in the account's time zone",
  values: ["day", "week", "month"] as const,
});

const BudgetRef = builder.objectRef<BudgetState>("Budget").implement({
  description: "A spend limit in its current period. Spent is what has settled (a second or so behind the gateway).",
  fields: (t) => ({
    period: t.field({ type: BudgetPeriodEnum, resolve: (b) => b.period }),
    limit: t.string({ resolve: (b) => money(b.limit) }),
    limitMicro: t.string({ resolve: (b) => b.limit.toString() }),
    spent: t.string({ resolve: (b) => money(b.spent) }),
    spentMicro: t.string({ resolve: (b) => b.spent.toString() }),
    remaining: t.string({
      description: "limit − spent, never below 0",
      resolve: (b) => money(b.limit > b.spent ? b.limit - b.spent : 0n),
    }),
    remainingMicro: t.string({ resolve: (b) => (b.limit > b.spent ? b.limit - b.spent : 0n).toString() }),
    startsAt: t.field({ type: "DateTime", resolve: (b) => b.start }),
    resetsAt: t.field({ type: "DateTime", resolve: (b) => b.end }),
  }),
});

const BudgetCapsRef = builder.objectRef<Account>("BudgetCaps").implement({
  description: "The operator's ceilings for the budgets the account's owners set (null: no cap).",
  fields: (t) => ({
    daily: t.string({ nullable: true, resolve: (a) => nullableMoney(capOf(a, "day")) }),
    weekly: t.string({ nullable: true, resolve: (a) => nullableMoney(capOf(a, "week")) }),
    monthly: t.string({ nullable: true, resolve: (a) => nullableMoney(capOf(a, "month")) }),
  }),
});
const nullableMoney = (m: bigint | null) => (m === null ? null : money(m));

const BudgetsInput = builder.inputType("BudgetsInput", {
  description: "Spend limits as decimal text. Omitted: unchanged; null: no limit for that period.",
  fields: (t) => ({ daily: t.string(), weekly: t.string(), monthly: t.string() }),
});

const inputName: Record<BudgetPeriod, "daily" | "weekly" | "monthly"> = {
  day: "daily",
  week: "weekly",
  month: "monthly",
};

function changeOf(input: Record<string, string | null | undefined>): BudgetChange {
  const change: BudgetChange = {};
  for (const p of budgetPeriods) {
    const v = input[inputName[p]];
    if (v === undefined) continue;
    change[p] = v === null ? null : amountArg(v, inputName[p]);
  }
  return change;
}

builder.prismaObjectFields("Account", (t) => ({
  timeZone: t.exposeString("timeZone", { description: "IANA time zone of the budget periods (default UTC)" }),
  budgets: t.field({
    type: [BudgetRef],
    description: "the account's budgets in their current periods",
    resolve: (a, _args, ctx) => budgetsOf(ctx.app, a, a),
  }),
  budgetCaps: t.field({ type: BudgetCapsRef, resolve: (a) => a }),
}));

builder.objectFields(ApiKeyRef, (t) => ({
  budgets: t.field({
    type: [BudgetRef],
    description: "the key's budgets in their current periods (the account's time zone)",
    resolve: async (k, _args, ctx) => {
      const account = await ctx.app.prisma.account.findUnique({
        where: { id: k.accountId },
        select: { id: true, timeZone: true },
      });
      if (!account) throw notFound("account");
      return budgetsOf(ctx.app, account, k, k.id);
    },
  }),
}));

builder.mutationFields((t) => ({
  setAccountBudgets: t.field({
    type: AccountRef,
    authScopes: { authenticated: true },
    description:
      "Owners (within the operator's caps) and operators: the account's daily, weekly and monthly spend limits.",
    args: { accountId: t.arg.id(), input: t.arg({ type: BudgetsInput, required: true }) },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "manage");
      return setAccountBudgets(ctx.app, accountId, changeOf(args.input), { operator: isOperator(ctx) });
    },
  }),
  setApiKeyBudgets: t.field({
    type: ApiKeyRef,
    authScopes: { authenticated: true },
    description: "Owners (within the operator's caps) and operators: a key's daily, weekly and monthly spend limits.",
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: BudgetsInput, required: true }) },
    resolve: async (_r, args, ctx) => {
      const key = await keyFor(ctx, String(args.id), "manage");
      return setKeyBudgets(ctx.app, key.id, changeOf(args.input), { operator: isOperator(ctx) });
    },
  }),
  setAccountBudgetCaps: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    description:
      "Operators: ceilings for the budgets owners set. Budgets above a new cap come down to it; an account without a budget for that period gets the cap.",
    args: { accountId: t.arg.id({ required: true }), input: t.arg({ type: BudgetsInput, required: true }) },
    resolve: (_r, args, ctx) =>
      setBudgetCaps(ctx.app, accountIdFor(ctx, String(args.accountId), "manage"), changeOf(args.input)),
  }),
  setAccountTimeZone: t.field({
    type: AccountRef,
    authScopes: { authenticated: true },
    description: "Owners and operators: the IANA time zone budget periods follow. Changing it starts new periods.",
    args: { accountId: t.arg.id(), timeZone: t.arg.string({ required: true }) },
    resolve: (_r, args, ctx) =>
      setTimeZone(ctx.app, accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "manage"), args.timeZone),
  }),
}));
