import type { ApiKey } from "../../generated/prisma/client.ts";
import { revokeApiKey } from "../../services/api-keys.ts";
import { notFound } from "../../services/errors.ts";
import { ipAllowlistSchema, limitValueSchema, nameSchema } from "../../services/inputs.ts";
import { changeApiKey, checkRestrictions, issueApiKey } from "../../services/key-policy.ts";
import { builder, isOperator } from "../builder.ts";
import type { GqlContext } from "../context.ts";
import { accountIdFor, checkId, money } from "../common.ts";
import { ApiKeyStatusEnum } from "./enums.ts";

export const ApiKeyRef = builder.objectRef<ApiKey>("ApiKey").implement({
  description: "An API key (sk-…) for the model API. Only its hash is kept: the value is shown once, at creation.",
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    prefix: t.exposeString("prefix", { description: "the first and last characters, to recognise the key" }),
    status: t.field({ type: ApiKeyStatusEnum, resolve: (k) => k.status }),
    state: t.string({
      description: "active, revoked, expired or exhausted (quota used up)",
      resolve: (k) =>
        k.status === "revoked"
          ? "revoked"
          : k.expiresAt && k.expiresAt.getTime() <= Date.now()
            ? "expired"
            : k.quotaMicro !== null && k.spentMicro >= k.quotaMicro
              ? "exhausted"
              : "active",
    }),
    quotaCap: t.string({ nullable: true, resolve: (k) => (k.quotaMicro === null ? null : money(k.quotaMicro)) }),
    quotaCapMicro: t.string({ nullable: true, resolve: (k) => k.quotaMicro?.toString() ?? null }),
    spent: t.string({ resolve: (k) => money(k.spentMicro) }),
    spentMicro: t.string({ resolve: (k) => k.spentMicro.toString() }),
    expiresAt: t.expose("expiresAt", { type: "DateTime", nullable: true }),
    allowedModels: t.exposeStringList("allowedModels", { description: "empty: every model of the account" }),
    ipAllowlist: t.exposeStringList("ipAllowlist", { description: "addresses or CIDRs; empty: any address" }),
    rpm: t.exposeInt("rpm", { nullable: true }),
    tpm: t.exposeInt("tpm", { nullable: true }),
    concurrency: t.exposeInt("concurrency", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    revokedAt: t.expose("revokedAt", { type: "DateTime", nullable: true }),
    lastUsedAt: t.expose("lastUsedAt", { type: "DateTime", nullable: true }),
  }),
});

const restrictionFields = builder.inputType("ApiKeyRestrictionsInput", {
  description: "Omitted fields stay as they are; null removes a limit.",
  fields: (t) => ({
    name: t.string({ validate: { schema: nameSchema } }),
    quotaCap: t.string({ description: "spending cap as decimal text; null: none" }),
    expiresAt: t.field({ type: "DateTime" }),
    allowedModels: t.stringList(),
    ipAllowlist: t.stringList({ validate: { schema: ipAllowlistSchema } }),
    rpm: t.int({ validate: { schema: limitValueSchema("rpm") } }),
    tpm: t.int({ validate: { schema: limitValueSchema("tpm") } }),
    concurrency: t.int({ validate: { schema: limitValueSchema("concurrency") } }),
  }),
});

const CreatedApiKey = builder.objectRef<{ key: string; apiKey: ApiKey }>("CreatedApiKey").implement({
  fields: (t) => ({
    key: t.exposeString("key", { description: "the key value; shown only now, store it safely" }),
    apiKey: t.field({ type: ApiKeyRef, resolve: (r) => r.apiKey }),
  }),
});

/** Loads a key the caller may see: another account's key is NOT_FOUND, never FORBIDDEN (no existence oracle). */
export async function keyFor(ctx: GqlContext, id: string, need: "read" | "manage") {
  const key = await ctx.app.prisma.apiKey.findUnique({ where: { id: checkId(id, "API key") } });
  if (!key) throw notFound("API key");
  if (!isOperator(ctx) && key.accountId !== ctx.principal?.user.accountId) throw notFound("API key");
  accountIdFor(ctx, key.accountId, need);
  return key;
}

type RestrictionsArg = Record<string, unknown> & {
  name?: string | null;
  quotaCap?: string | null;
  expiresAt?: Date | null;
  allowedModels?: string[] | null;
  ipAllowlist?: string[] | null;
  rpm?: number | null;
  tpm?: number | null;
  concurrency?: number | null;
};

builder.queryFields((t) => ({
  apiKeys: t.field({
    type: [ApiKeyRef],
    authScopes: { authenticated: true },
    args: { accountId: t.arg.id(), includeRevoked: t.arg.boolean({ defaultValue: true }) },
    resolve: (_r, args, ctx) =>
      ctx.app.prisma.apiKey.findMany({
        where: {
          accountId: accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read"),
          ...(args.includeRevoked === false ? { status: "active" as const } : {}),
        },
        orderBy: { createdAt: "asc" },
      }),
  }),
  apiKey: t.field({
    type: ApiKeyRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => keyFor(ctx, String(id), "read"),
  }),
}));

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreatedApiKey,
    authScopes: { authenticated: true },
    description: "Owners (and operators) create keys. On a trial account the key carries the trial quota and expiry.",
    args: { accountId: t.arg.id(), input: t.arg({ type: restrictionFields, required: true }) },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "manage");
      const input = args.input as RestrictionsArg;
      const r = await checkRestrictions(ctx.app, input, (f) => input[f] !== undefined);
      const { key, row } = await issueApiKey(ctx.app, accountId, r, { operator: isOperator(ctx) });
      return { key, apiKey: row };
    },
  }),
  updateApiKey: t.field({
    type: ApiKeyRef,
    authScopes: { authenticated: true },
    description: "Changes a key's name and restrictions. Trial limits cannot be lifted by the customer.",
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: restrictionFields, required: true }) },
    resolve: async (_r, args, ctx) => {
      const key = await keyFor(ctx, String(args.id), "manage");
      const input = args.input as RestrictionsArg;
      const r = await checkRestrictions(ctx.app, input, (f) => input[f] !== undefined);
      return changeApiKey(ctx.app, key.id, r, { operator: isOperator(ctx) });
    },
  }),
  revokeApiKey: t.field({
    type: ApiKeyRef,
    authScopes: { authenticated: true },
    description: "Revokes a key for good; every gateway replica refuses it within a second.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, { id }, ctx) => {
      const key = await keyFor(ctx, String(id), "manage");
      if (key.status === "revoked") return key;
      return revokeApiKey(ctx.app, key.id);
    },
  }),
}));
