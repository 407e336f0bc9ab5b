import { queryFromInfo } from "@pothos/plugin-prisma";
import type { Account } from "../../generated/prisma/client.ts";
import { setAccountLimits, setAccountStatus } from "../../services/catalog.ts";
import { openCustomer } from "../../services/customers.ts";
import { notFound } from "../../services/errors.ts";
import { getTrialPolicy, setTrialPolicy } from "../../services/key-policy.ts";
import { builder } from "../builder.ts";
import { accountIdFor, amountArg, clampFirst, checkId, money } from "../common.ts";
import { AccountKindEnum, AccountStatusEnum } from "./enums.ts";
import { UserRef, type UserRow } from "./user.ts";

// Customer accounts: the Account type, the operators' list, opening a customer, limits, status and trial policy.
// Membership (users, invitations) is in membership.ts; top-ups and corrections in wallet-operations.ts.

const TrialPolicyRef = builder.objectRef<{ quotaMicro: bigint; expiresAt: Date }>("TrialPolicy").implement({
  description: "Every key of a trial account carries this quota and expiry; the customer cannot lift them.",
  fields: (t) => ({
    quota: t.string({ resolve: (p) => money(p.quotaMicro) }),
    quotaMicro: t.string({ resolve: (p) => p.quotaMicro.toString() }),
    expiresAt: t.expose("expiresAt", { type: "DateTime" }),
  }),
});

export const AccountRef = builder.prismaObject("Account", {
  description: "A customer account: the wallet, its keys and its users.",
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    email: t.exposeString("email", { nullable: true }),
    kind: t.field({ type: AccountKindEnum, resolve: (a) => a.kind }),
    status: t.field({ type: AccountStatusEnum, resolve: (a) => a.status }),
    balance: t.string({ description: 'decimal text, e.g. "12.5"', resolve: (a) => money(a.balanceMicro) }),
    balanceMicro: t.string({ resolve: (a) => a.balanceMicro.toString() }),
    currency: t.exposeString("currency"),
    rpm: t.exposeInt("rpm", { nullable: true, description: "default requests per minute per key (null: unlimited)" }),
    tpm: t.exposeInt("tpm", { nullable: true }),
    concurrency: t.exposeInt("concurrency", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    trialPolicy: t.field({
      type: TrialPolicyRef,
      nullable: true,
      resolve: (a, _args, ctx) => (a.kind === "trial" ? getTrialPolicy(ctx.app, a) : null),
    }),
  }),
});

const AccountPage = builder.objectRef<{ nodes: Account[]; total: number }>("AccountPage").implement({
  fields: (t) => ({
    nodes: t.field({ type: [AccountRef], resolve: (p) => p.nodes }),
    total: t.exposeInt("total"),
  }),
});

builder.queryFields((t) => ({
  account: t.field({
    type: AccountRef,
    authScopes: { authenticated: true },
    description: "Your account; operators may name any account.",
    args: { accountId: t.arg.id() },
    resolve: async (_r, args, ctx) => {
      const id = accountIdFor(
        ctx,
        args.accountId === null || args.accountId === undefined ? null : String(args.accountId),
        "read",
      );
      const a = await ctx.app.prisma.account.findUnique({ where: { id } });
      if (!a) throw notFound("account");
      return a;
    },
  }),
  accounts: t.field({
    type: AccountPage,
    authScopes: { operator: true },
    description: "Operators: customer accounts, by name.",
    args: { search: t.arg.string(), first: t.arg.int(), offset: t.arg.int() },
    resolve: async (_r, args, ctx, info) => {
      const first = clampFirst(args.first, 50, 200);
      const offset = Math.max(0, args.offset ?? 0);
      const where = args.search ? { name: { contains: args.search, mode: "insensitive" as const } } : {};
      // What the query asks of each node (e.g. members) is loaded with the page, in the same Prisma query.
      const selection = queryFromInfo({ context: ctx, info, typeName: "Account", path: ["nodes"] });
      const [nodes, total] = await Promise.all([
        ctx.app.prisma.account.findMany({ ...selection, where, orderBy: { name: "asc" }, take: first, skip: offset }),
        ctx.app.prisma.account.count({ where }),
      ]);
      return { nodes, total };
    },
  }),
}));

const OwnerInput = builder.inputType("CustomerOwnerInput", {
  fields: (t) => ({
    email: t.string({ required: true }),
    name: t.string(),
    password: t.string({ description: "set it now; without it an invitation is mailed" }),
  }),
});

const CreateCustomerInput = builder.inputType("CreateCustomerInput", {
  fields: (t) => ({
    name: t.string({ required: true }),
    email: t.string({ description: "business contact address" }),
    kind: t.field({ type: AccountKindEnum, defaultValue: "standard" }),
    initialBalance: t.string({ description: "decimal text" }),
    trialQuota: t.string({ description: "trial accounts: each key's quota (decimal text)" }),
    trialExpiresAt: t.field({ type: "DateTime", description: "trial accounts: every key expires then" }),
    rpm: t.int(),
    tpm: t.int(),
    concurrency: t.int(),
    owner: t.field({ type: OwnerInput }),
  }),
});

const CreatedCustomer = builder
  .objectRef<{ account: Account; owner: UserRow | null; invitationToken: string | null }>("CreatedCustomer")
  .implement({
    fields: (t) => ({
      account: t.field({ type: AccountRef, resolve: (r) => r.account }),
      owner: t.field({ type: UserRef, nullable: true, resolve: (r) => r.owner }),
      invitationToken: t.exposeString("invitationToken", {
        nullable: true,
        description: "when no password was given: the invitation token (also mailed), shown once",
      }),
    }),
  });

builder.mutationFields((t) => ({
  createCustomer: t.field({
    type: CreatedCustomer,
    authScopes: { operator: true },
    description: "Operators: opens a customer account, optionally with its first owner (password or invitation).",
    args: { input: t.arg({ type: CreateCustomerInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      openCustomer(ctx.app, {
        name: input.name,
        email: input.email,
        kind: input.kind ?? "standard",
        balanceMicro: input.initialBalance ? amountArg(input.initialBalance, "initialBalance") : 0n,
        rpm: input.rpm,
        tpm: input.tpm,
        concurrency: input.concurrency,
        trialQuotaMicro: input.trialQuota ? amountArg(input.trialQuota, "trialQuota") : null,
        trialExpiresAt: input.trialExpiresAt,
        owner: input.owner,
      }),
  }),
  setAccountLimits: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    description: "Default rate limits for every key of the account (null: unlimited).",
    args: { accountId: t.arg.id({ required: true }), rpm: t.arg.int(), tpm: t.arg.int(), concurrency: t.arg.int() },
    resolve: (_r, args, ctx) =>
      setAccountLimits(ctx.app, checkId(String(args.accountId), "account"), {
        rpm: args.rpm ?? null,
        tpm: args.tpm ?? null,
        concurrency: args.concurrency ?? null,
      }),
  }),
  setAccountStatus: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    args: { accountId: t.arg.id({ required: true }), status: t.arg({ type: AccountStatusEnum, required: true }) },
    resolve: (_r, args, ctx) => setAccountStatus(ctx.app, checkId(String(args.accountId), "account"), args.status),
  }),
  setTrialPolicy: t.field({
    type: AccountRef,
    authScopes: { operator: true },
    description: "Trial accounts: the quota and expiry every key carries; applied to existing keys at once.",
    args: {
      accountId: t.arg.id({ required: true }),
      quota: t.arg.string({ required: true }),
      expiresAt: t.arg({ type: "DateTime", required: true }),
    },
    resolve: (_r, args, ctx) =>
      setTrialPolicy(ctx.app, checkId(String(args.accountId), "account"), {
        quotaMicro: amountArg(args.quota, "quota"),
        expiresAt: args.expiresAt,
      }),
  }),
}));
