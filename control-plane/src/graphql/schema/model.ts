import type { Model, PriceContract, Route, Upstream } from "../../generated/prisma/client.ts";
import {
  deleteModel,
  deletePriceContract,
  deleteRoute,
  deleteUpstream,
  setPriceContract,
  upsertModel,
  upsertRoute,
  secretNamesOf,
  upsertUpstream,
} from "../../services/catalog.ts";
import { builder, type Types } from "../builder.ts";
import { OPERATOR_PROTOCOLS, PROVIDERS, enumName, fromEnumName, providers, unitPrices } from "@modelgate/data-plane";
import type { PROVIDER_OPTIONS } from "../../services/upstream-provider.ts";
import { formatMicroText } from "../../services/money.ts";
import { accountIdFor, checkId, money } from "../common.ts";
import { ConfigSourceEnum, ModelTypeEnum, UpstreamProtocolEnum, UpstreamProviderEnum } from "./enums.ts";

// Customers see the models they may call at their contract prices; operators manage models, upstreams, routes
// and price contracts. Prices are per one million tokens, as decimal text.

interface PricedModel {
  model: Model;
  contract: PriceContract | null;
}

const priceFields = (t: PothosSchemaTypes.ObjectFieldBuilder<Types, PricedModel>) => ({
  inputPrice: t.string({
    description: "per 1M prompt tokens, under the account's contract",
    resolve: (m) => money(m.contract?.inputPriceMicro ?? m.model.inputPriceMicro),
  }),
  outputPrice: t.string({ resolve: (m) => money(m.contract?.outputPriceMicro ?? m.model.outputPriceMicro) }),
  cachedInputPrice: t.string({
    nullable: true,
    resolve: (m) => {
      const v = m.contract ? m.contract.cachedInputPriceMicro : m.model.cachedInputPriceMicro;
      return v === null ? null : money(v);
    },
  }),
  cacheWrite5mPrice: t.string({
    description: "per 1M tokens written to a 5-minute prompt cache (1.25 × input unless set)",
    resolve: (m) => formatMicroText(effectivePrices(m).cacheWrite5m),
  }),
  cacheWrite1hPrice: t.string({
    description: "per 1M tokens written to a 1-hour prompt cache (2 × input unless set)",
    resolve: (m) => formatMicroText(effectivePrices(m).cacheWrite1h),
  }),
  contracted: t.boolean({
    description: "true when a contract price applies, false for list price",
    resolve: (m) => m.contract !== null,
  }),
});

const nullableText = (v: bigint | null) => (v === null ? null : v.toString());
/** The prices the data plane bills at (billing/cost.ts), defaults applied, so customers see what they pay. */
function effectivePrices(m: PricedModel) {
  const p = m.contract ?? m.model;
  return unitPrices({
    input: p.inputPriceMicro.toString(),
    output: p.outputPriceMicro.toString(),
    cachedInput: nullableText(p.cachedInputPriceMicro),
    cacheWrite5m: nullableText(p.cacheWrite5mPriceMicro),
    cacheWrite1h: nullableText(p.cacheWrite1hPriceMicro),
  });
}
const optionalMoney = (v: bigint | null) => (v === null ? null : money(v));

const CustomerModelRef = builder.objectRef<PricedModel>("CustomerModel").implement({
  description: "A model the account may call, with its price under the account's contract.",
  fields: (t) => ({
    id: t.string({ description: "the full model ID to send as `model`", resolve: (m) => m.model.id }),
    displayName: t.string({ nullable: true, resolve: (m) => m.model.displayName }),
    reasoning: t.boolean({ resolve: (m) => m.model.reasoning }),
    type: t.field({ type: ModelTypeEnum, resolve: (m) => m.model.type }),
    ...priceFields(t),
  }),
});

export const UpstreamRef = builder.objectRef<Upstream>("Upstream").implement({
  description: "Operators: a provider endpoint. The credential is sealed and never shown.",
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    provider: t.field({ type: UpstreamProviderEnum, resolve: (u) => enumName(u.provider) }),
    protocol: t.field({
      type: UpstreamProtocolEnum,
      nullable: true,
      description: "null: the provider implies it per model (Bedrock, Vertex)",
      resolve: (u) => u.protocol,
    }),
    baseUrl: t.exposeString("baseUrl"),
    apiVersion: t.string({ nullable: true, resolve: (u) => optionOf(u, "apiVersion") }),
    region: t.string({ nullable: true, resolve: (u) => optionOf(u, "region") }),
    project: t.string({ nullable: true, resolve: (u) => optionOf(u, "project") }),
    auth: t.string({ nullable: true, resolve: (u) => optionOf(u, "auth") }),
    hasApiKey: t.boolean({ resolve: (u) => u.apiKeyEnc !== null }),
    secretsSet: t.stringList({
      description: "which of the provider's other secrets are set (their values are never shown)",
      resolve: (u, _a, ctx) => secretNamesOf(ctx.app, u),
    }),
    enabled: t.exposeBoolean("enabled"),
    connectTimeoutMs: t.exposeInt("connectTimeoutMs"),
    firstByteTimeoutMs: t.exposeInt("firstByteTimeoutMs"),
    idleTimeoutMs: t.exposeInt("idleTimeoutMs"),
    source: t.field({ type: ConfigSourceEnum, resolve: (u) => u.source }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

const UpstreamProviderInfo = builder
  .objectRef<{ name: string; requiredOptions: string[]; options: string[]; secrets: string[]; needsKey: boolean }>(
    "UpstreamProviderInfo",
  )
  .implement({
    fields: (t) => ({
      name: t.field({ type: UpstreamProviderEnum, resolve: (p) => enumName(p.name) }),
      requiredOptions: t.exposeStringList("requiredOptions"),
      options: t.exposeStringList("options", {
        description: "the settings it reads (apiVersion, region, project, auth)",
      }),
      secrets: t.exposeStringList("secrets", { description: "the secrets it reads besides apiKey" }),
      needsKey: t.exposeBoolean("needsKey"),
    }),
  });

/** One of the provider's settings (they are stored together). */
const optionOf = (u: Upstream, name: (typeof PROVIDER_OPTIONS)[number]): string | null =>
  (u.options as Record<string, string>)[name] ?? null;

const RouteRef = builder.objectRef<Route>("Route").implement({
  fields: (t) => ({
    id: t.exposeID("id"),
    modelId: t.exposeString("modelId"),
    upstreamModel: t.exposeString("upstreamModel"),
    weight: t.exposeInt("weight"),
    priority: t.exposeInt("priority"),
    upstream: t.field({
      type: UpstreamRef,
      resolve: (r, _a, ctx) => ctx.app.prisma.upstream.findUniqueOrThrow({ where: { id: r.upstreamId } }),
    }),
  }),
});

const ModelRef = builder.objectRef<Model>("Model").implement({
  description: "Operators: a model with its list prices and routes.",
  fields: (t) => ({
    id: t.exposeString("id"),
    displayName: t.exposeString("displayName", { nullable: true }),
    reasoning: t.exposeBoolean("reasoning"),
    strict: t.exposeBoolean("strict", {
      description:
        "toward an upstream of another protocol, what would be dropped or removed (hints, hosted tools) is a 400 instead",
    }),
    fallbacks: t.exposeStringList("fallbacks", {
      description:
        "model IDs tried in order when every route of this one fails before the first byte; the answer and the bill name the one that served",
    }),
    type: t.field({ type: ModelTypeEnum, resolve: (m) => m.type }),
    enabled: t.exposeBoolean("enabled"),
    source: t.field({ type: ConfigSourceEnum, resolve: (m) => m.source }),
    inputPrice: t.string({ resolve: (m) => money(m.inputPriceMicro) }),
    outputPrice: t.string({ resolve: (m) => money(m.outputPriceMicro) }),
    cachedInputPrice: t.string({
      nullable: true,
      resolve: (m) => (m.cachedInputPriceMicro === null ? null : money(m.cachedInputPriceMicro)),
    }),
    cacheWrite5mPrice: t.string({
      nullable: true,
      description: "null: 1.25 × input",
      resolve: (m) => optionalMoney(m.cacheWrite5mPriceMicro),
    }),
    cacheWrite1hPrice: t.string({
      nullable: true,
      description: "null: 2 × input",
      resolve: (m) => optionalMoney(m.cacheWrite1hPriceMicro),
    }),
    routes: t.field({
      type: [RouteRef],
      resolve: (m, _a, ctx) =>
        ctx.app.prisma.route.findMany({
          where: { modelId: m.id },
          orderBy: [{ priority: "desc" }, { weight: "desc" }],
        }),
    }),
  }),
});

const PriceContractRef = builder.objectRef<PriceContract>("PriceContract").implement({
  fields: (t) => ({
    id: t.exposeID("id"),
    accountId: t.exposeID("accountId"),
    modelId: t.exposeString("modelId"),
    inputPrice: t.string({ resolve: (c) => money(c.inputPriceMicro) }),
    outputPrice: t.string({ resolve: (c) => money(c.outputPriceMicro) }),
    cachedInputPrice: t.string({
      nullable: true,
      resolve: (c) => (c.cachedInputPriceMicro === null ? null : money(c.cachedInputPriceMicro)),
    }),
    cacheWrite5mPrice: t.string({
      nullable: true,
      description: "null: 1.25 × input",
      resolve: (c) => optionalMoney(c.cacheWrite5mPriceMicro),
    }),
    cacheWrite1hPrice: t.string({
      nullable: true,
      description: "null: 2 × input",
      resolve: (c) => optionalMoney(c.cacheWrite1hPriceMicro),
    }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

builder.queryFields((t) => ({
  models: t.field({
    type: [CustomerModelRef],
    authScopes: { authenticated: true },
    description: "The models your account may call, with your prices per 1M tokens.",
    args: { accountId: t.arg.id() },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read");
      const [models, contracts] = await Promise.all([
        ctx.app.prisma.model.findMany({ where: { enabled: true }, orderBy: { id: "asc" } }),
        ctx.app.prisma.priceContract.findMany({ where: { accountId } }),
      ]);
      const byModel = new Map(contracts.map((c) => [c.modelId, c]));
      return models.map((model) => ({ model, contract: byModel.get(model.id) ?? null }));
    },
  }),
  catalogModels: t.field({
    type: [ModelRef],
    authScopes: { operator: true },
    resolve: (_r, _a, ctx) => ctx.app.prisma.model.findMany({ orderBy: { id: "asc" } }),
  }),
  upstreamProviders: t.field({
    type: [UpstreamProviderInfo],
    authScopes: { operator: true },
    description: "The providers this gateway knows, with what an upstream of each needs",
    resolve: () =>
      PROVIDERS.map((name) => ({
        name,
        requiredOptions: [...(providers[name].requiredOptions ?? [])],
        options: [...(providers[name].options ?? [])],
        secrets: [...(providers[name].secrets ?? [])],
        needsKey: providers[name].needsKey,
      })),
  }),
  upstreams: t.field({
    type: [UpstreamRef],
    authScopes: { operator: true },
    resolve: (_r, _a, ctx) => ctx.app.prisma.upstream.findMany({ orderBy: { name: "asc" } }),
  }),
  priceContracts: t.field({
    type: [PriceContractRef],
    authScopes: { operator: true },
    args: { accountId: t.arg.id({ required: true }) },
    resolve: (_r, args, ctx) =>
      ctx.app.prisma.priceContract.findMany({
        where: { accountId: checkId(String(args.accountId), "account") },
        orderBy: { modelId: "asc" },
      }),
  }),
}));

const ModelInput = builder.inputType("ModelInput", {
  fields: (t) => ({
    id: t.string({ required: true, description: "full ID ending in a date, e.g. acme-chat-2025-01-01" }),
    displayName: t.string(),
    reasoning: t.boolean(),
    strict: t.boolean({ description: "refuse (400) what a translation would drop or remove; false unless set" }),
    fallbacks: t.stringList({
      description: "model IDs tried in order when every route fails before the first byte; none unless set",
    }),
    type: t.field({ type: ModelTypeEnum, description: "chat unless set" }),
    inputPrice: t.string({ required: true, description: 'per 1M tokens, decimal text; required ("0" for free)' }),
    outputPrice: t.string({ required: true }),
    cachedInputPrice: t.string({ description: "cache reads; omit to bill them at input" }),
    cacheWrite5mPrice: t.string({ description: "5-minute cache writes; omit for 1.25 × input" }),
    cacheWrite1hPrice: t.string({ description: "1-hour cache writes; omit for 2 × input" }),
    enabled: t.boolean(),
  }),
});

const UpstreamKeyInput = builder.inputType("UpstreamKeyInput", {
  fields: (t) => ({
    id: t.string({ required: true, description: "the operator's name for the key, unique per upstream" }),
    apiKey: t.string({ description: "write-only; omit to keep the stored secret of an existing key" }),
    weight: t.int({ description: "default 1" }),
  }),
});

const UpstreamInput = builder.inputType("UpstreamInput", {
  fields: (t) => ({
    id: t.id({ description: "omit to create" }),
    name: t.string({ required: true }),
    provider: t.field({ type: UpstreamProviderEnum, description: "omit for direct" }),
    protocol: t.field({ type: UpstreamProtocolEnum, description: "omit where the provider implies it" }),
    baseUrl: t.string({ description: "omit for the provider's default endpoint" }),
    apiVersion: t.string({ description: "Azure OpenAI's api-version; omit for its v1 API" }),
    region: t.string({ description: "Bedrock's and Vertex's region" }),
    project: t.string({ description: "Vertex's project" }),
    auth: t.string({ description: "Azure OpenAI: key (default) or entra" }),
    apiKey: t.string({ description: "omit to keep, null to remove" }),
    keys: t.field({
      type: [UpstreamKeyInput],
      description:
        "a key pool instead of apiKey (docs/routing.md): omit to keep the pool, give the whole pool to replace it (a key given without apiKey keeps its secret), [] to remove it",
    }),
    accessKeyId: t.string({ description: "Bedrock; write-only: omit to keep, null to remove" }),
    secretAccessKey: t.string({ description: "Bedrock; write-only: omit to keep, null to remove" }),
    sessionToken: t.string({ description: "Bedrock; write-only: omit to keep, null to remove" }),
    serviceAccount: t.string({
      description: "Vertex: the service-account JSON; write-only: omit to keep, null to remove",
    }),
    enabled: t.boolean(),
    connectTimeoutMs: t.int(),
    firstByteTimeoutMs: t.int(),
    idleTimeoutMs: t.int(),
  }),
});

const RouteInput = builder.inputType("RouteInput", {
  fields: (t) => ({
    modelId: t.string({ required: true }),
    upstreamId: t.id({ required: true }),
    upstreamModel: t.string({ required: true }),
    weight: t.int(),
    priority: t.int(),
  }),
});

const PriceContractInput = builder.inputType("PriceContractInput", {
  fields: (t) => ({
    accountId: t.id({ required: true }),
    modelId: t.string({ required: true }),
    inputPrice: t.string({ required: true, description: "per 1M tokens, decimal text" }),
    outputPrice: t.string({ required: true }),
    cachedInputPrice: t.string({ description: "cache reads; omit to bill them at input" }),
    cacheWrite5mPrice: t.string({ description: "5-minute cache writes; omit for 1.25 × input" }),
    cacheWrite1hPrice: t.string({ description: "1-hour cache writes; omit for 2 × input" }),
  }),
});

builder.mutationFields((t) => ({
  upsertModel: t.field({
    type: ModelRef,
    authScopes: { operator: true },
    args: { input: t.arg({ type: ModelInput, required: true }) },
    resolve: (_r, { input }, ctx) => upsertModel(ctx.app, input),
  }),
  deleteModel: t.boolean({
    authScopes: { operator: true },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (_r, { id }, ctx) => {
      await deleteModel(ctx.app, id);
      return true;
    },
  }),
  upsertUpstream: t.field({
    type: UpstreamRef,
    authScopes: { operator: true },
    args: { input: t.arg({ type: UpstreamInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      upsertUpstream(ctx.app, {
        ...input,
        id: input.id ? checkId(String(input.id), "upstream") : null,
        provider: input.provider == null ? null : fromEnumName(PROVIDERS, input.provider),
        protocol: input.protocol == null ? null : fromEnumName(OPERATOR_PROTOCOLS, input.protocol),
        keys: input.keys?.map((k) => ({ id: k.id, apiKey: k.apiKey ?? undefined, weight: k.weight })),
      }),
  }),
  deleteUpstream: t.boolean({
    authScopes: { operator: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, { id }, ctx) => {
      await deleteUpstream(ctx.app, checkId(String(id), "upstream"));
      return true;
    },
  }),
  upsertRoute: t.field({
    type: RouteRef,
    authScopes: { operator: true },
    args: { input: t.arg({ type: RouteInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      upsertRoute(ctx.app, { ...input, upstreamId: checkId(String(input.upstreamId), "upstream") }),
  }),
  deleteRoute: t.boolean({
    authScopes: { operator: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, { id }, ctx) => {
      await deleteRoute(ctx.app, checkId(String(id), "route"));
      return true;
    },
  }),
  setPriceContract: t.field({
    type: PriceContractRef,
    authScopes: { operator: true },
    args: { input: t.arg({ type: PriceContractInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      setPriceContract(ctx.app, { ...input, accountId: checkId(String(input.accountId), "account") }),
  }),
  deletePriceContract: t.boolean({
    authScopes: { operator: true },
    args: { accountId: t.arg.id({ required: true }), modelId: t.arg.string({ required: true }) },
    resolve: async (_r, args, ctx) => {
      await deletePriceContract(ctx.app, checkId(String(args.accountId), "account"), args.modelId);
      return true;
    },
  }),
}));
