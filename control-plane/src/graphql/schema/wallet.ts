import type { LedgerEntry } from "../../generated/prisma/client.ts";
import { spendBetween } from "../../stats/aggregate.ts";
import { builder } from "../builder.ts";
import { accountIdFor, clampFirst, money } from "../common.ts";
import { LedgerKindEnum } from "./enums.ts";
import { ApiKeyRef } from "./api-key.ts";
import { decodeCursor, encodeCursor } from "../../db/cursor.ts";
import type { ApiKey } from "../../generated/prisma/client.ts";

const LedgerEntryRef = builder.objectRef<LedgerEntry>("LedgerEntry").implement({
  fields: (t) => ({
    id: t.exposeID("id"),
    kind: t.field({ type: LedgerKindEnum, resolve: (e) => e.kind }),
    amount: t.string({
      description: "signed decimal text: positive credits, negative debits",
      resolve: (e) => money(e.amountMicro),
    }),
    amountMicro: t.string({ resolve: (e) => e.amountMicro.toString() }),
    balanceAfter: t.string({ resolve: (e) => money(e.balanceAfterMicro) }),
    balanceAfterMicro: t.string({ resolve: (e) => e.balanceAfterMicro.toString() }),
    apiKeyId: t.exposeID("apiKeyId", { nullable: true }),
    requestId: t.exposeString("requestId", { nullable: true }),
    batchId: t.exposeID("batchId", {
      nullable: true,
      description: "usage and correction lines: the settled batch, as on its usage rows",
    }),
    calls: t.exposeInt("calls", {
      nullable: true,
      description: "usage and correction lines: how many of the account's calls the line sums",
    }),
    note: t.exposeString("note", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

const LedgerPage = builder
  .objectRef<{ nodes: LedgerEntry[]; hasNextPage: boolean; endCursor: string | null }>("LedgerPage")
  .implement({
    fields: (t) => ({
      nodes: t.field({ type: [LedgerEntryRef], resolve: (p) => p.nodes }),
      hasNextPage: t.exposeBoolean("hasNextPage"),
      endCursor: t.exposeString("endCursor", { nullable: true }),
    }),
  });

interface WalletShape {
  accountId: string;
  balanceMicro: bigint;
  currency: string;
}

const KeySpend = builder.objectRef<ApiKey>("KeySpend").implement({
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyRef, resolve: (k) => k }),
    spent: t.string({ description: "lifetime spend of the key", resolve: (k) => money(k.spentMicro) }),
    spentMicro: t.string({ resolve: (k) => k.spentMicro.toString() }),
  }),
});

const startOfUtcDay = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
const startOfUtcMonth = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));

const WalletRef = builder.objectRef<WalletShape>("Wallet").implement({
  description: "Balance and spend; spend figures come from the usage log (UTC days and months).",
  fields: (t) => ({
    balance: t.string({ resolve: (w) => money(w.balanceMicro) }),
    balanceMicro: t.string({ resolve: (w) => w.balanceMicro.toString() }),
    currency: t.exposeString("currency"),
    spentToday: t.string({
      resolve: async (w, _a, ctx) => {
        const now = new Date();
        return money(
          (await spendBetween(ctx.app, w.accountId, startOfUtcDay(now), new Date(now.getTime() + 1))).costMicro,
        );
      },
    }),
    spentThisMonth: t.string({
      resolve: async (w, _a, ctx) => {
        const now = new Date();
        return money(
          (await spendBetween(ctx.app, w.accountId, startOfUtcMonth(now), new Date(now.getTime() + 1))).costMicro,
        );
      },
    }),
    keys: t.field({
      type: [KeySpend],
      description: "every key with its lifetime spend, biggest first",
      resolve: (w, _a, ctx) =>
        ctx.app.prisma.apiKey.findMany({
          where: { accountId: w.accountId },
          orderBy: [{ spentMicro: "desc" }, { createdAt: "asc" }],
        }),
    }),
  }),
});

builder.queryFields((t) => ({
  wallet: t.field({
    type: WalletRef,
    authScopes: { authenticated: true },
    args: { accountId: t.arg.id() },
    resolve: async (_r, args, ctx) => {
      const id = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read");
      const a = await ctx.app.prisma.account.findUniqueOrThrow({ where: { id } });
      return { accountId: a.id, balanceMicro: a.balanceMicro, currency: a.currency };
    },
  }),
  ledger: t.field({
    type: LedgerPage,
    authScopes: { authenticated: true },
    description: "Wallet movements, newest first.",
    args: { accountId: t.arg.id(), first: t.arg.int(), after: t.arg.string() },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read");
      const first = clampFirst(args.first, 50, 200);
      const c = args.after ? decodeCursor(args.after) : null;
      const rows = await ctx.app.prisma.ledgerEntry.findMany({
        where: c
          ? { accountId, OR: [{ createdAt: { lt: c.startedAt } }, { createdAt: c.startedAt, id: { lt: c.id } }] }
          : { accountId },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        take: first + 1,
      });
      const nodes = rows.slice(0, first);
      const last = nodes[nodes.length - 1];
      return {
        nodes,
        hasNextPage: rows.length > first,
        endCursor: last ? encodeCursor(last.createdAt, last.id) : null,
      };
    },
  }),
}));
