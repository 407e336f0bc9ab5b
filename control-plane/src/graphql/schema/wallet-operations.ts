import { topUp } from "../../services/accounts.ts";
import { adjustBalance } from "../../services/catalog.ts";
import { builder } from "../builder.ts";
import { amountArg, checkId } from "../common.ts";
import { AccountRef } from "./account.ts";

// Wallet operations (operators): top-ups and signed corrections, each one ledger entry with the balance after it.

builder.mutationFields((t) => ({
  topUp: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    args: { accountId: t.arg.id({ required: true }), amount: t.arg.string({ required: true }), note: t.arg.string() },
    resolve: (_r, args, ctx) =>
      topUp(
        ctx.app,
        checkId(String(args.accountId), "account"),
        amountArg(args.amount, "amount"),
        args.note ?? undefined,
      ),
  }),
  adjustBalance: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    description: 'A signed correction ("-2.5" debits), with a note.',
    args: {
      accountId: t.arg.id({ required: true }),
      amount: t.arg.string({ required: true }),
      note: t.arg.string({ required: true }),
    },
    resolve: (_r, args, ctx) =>
      adjustBalance(ctx.app, checkId(String(args.accountId), "account"), amountArg(args.amount, "amount"), args.note),
  }),
}));
