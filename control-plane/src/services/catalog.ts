import { enumName, open, seal } from "@modelgate/data-plane";
import {
  PROVIDER_OPTIONS,
  PROVIDER_SECRETS,
  SECRET_MAX_LENGTH,
  type OperatorProtocol,
  type ProviderName,
  type ProviderOptionName,
  type ProviderSecretName,
  checkUpstreamShape,
} from "./upstream-provider.ts";
import type { AccountStatus, UpstreamProtocol } from "../generated/prisma/client.ts";
import { audit } from "../audit/record.ts";
import { applyLedger } from "./accounts.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, badInput, notFound } from "./errors.ts";
import { parseAmount } from "./money.ts";
import { checkKeys, type KeyInput, replaceKeys } from "./upstream-keys.ts";
import { checkFallbacks } from "./model-fallbacks.ts";

// Operator-side writes: price contracts, models, upstreams, routes, account limits and balance adjustments.
// Prices are typed as decimal text per one million tokens and stored as micro-units.

export function price(text: string, field: string): bigint {
  let v: bigint;
  try {
    v = parseAmount(text);
  } catch (err) {
    throw badInput((err as Error).message, field);
  }
  if (v < 0n) throw badInput("a price cannot be negative", field);
  return v;
}
const optionalPrice = (text: string | null | undefined, field: string) =>
  text === null || text === undefined ? null : price(text, field);

/** A model's or a contract's price classes, per 1M tokens as decimal text (see docs/billing.md). */
export interface PriceInput {
  inputPrice: string;
  outputPrice: string;
  cachedInputPrice?: string | null;
  cacheWrite5mPrice?: string | null;
  cacheWrite1hPrice?: string | null;
}

/**
 * Input and output are required and must be amounts: a model is never billed 0 by omission, only by an
 * explicit "0". The cache classes may be left out (null): reads then bill at input, writes at 1.25 × and 2 × input.
 */
function priceData(input: PriceInput) {
  return {
    inputPriceMicro: price(input.inputPrice, "inputPrice"),
    outputPriceMicro: price(input.outputPrice, "outputPrice"),
    cachedInputPriceMicro: optionalPrice(input.cachedInputPrice, "cachedInputPrice"),
    cacheWrite5mPriceMicro: optionalPrice(input.cacheWrite5mPrice, "cacheWrite5mPrice"),
    cacheWrite1hPriceMicro: optionalPrice(input.cacheWrite1hPrice, "cacheWrite1hPrice"),
  };
}

export async function setPriceContract(
  ctx: ServiceContext,
  input: { accountId: string; modelId: string } & PriceInput,
) {
  const data = priceData(input);
  if (!(await ctx.prisma.model.findUnique({ where: { id: input.modelId } }))) throw notFound("model");
  if (!(await ctx.prisma.account.findUnique({ where: { id: input.accountId } }))) throw notFound("account");
  const where = { accountId_modelId: { accountId: input.accountId, modelId: input.modelId } };
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.priceContract.findUnique({ where });
    const after = await tx.priceContract.upsert({
      where,
      create: { accountId: input.accountId, modelId: input.modelId, ...data },
      update: data,
    });
    await audit(tx, ctx.actor, {
      action: "price_contract.set",
      subjectType: "price_contract",
      subjectId: input.modelId,
      accountId: input.accountId,
      before,
      after,
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function deletePriceContract(ctx: ServiceContext, accountId: string, modelId: string) {
  await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.priceContract.findUnique({ where: { accountId_modelId: { accountId, modelId } } });
    if (!before) throw notFound("price contract");
    await tx.priceContract.delete({ where: { id: before.id } });
    await audit(tx, ctx.actor, {
      action: "price_contract.delete",
      subjectType: "price_contract",
      subjectId: modelId,
      accountId,
      before,
    });
  });
  ctx.snapshotChanged();
}

/** Full model IDs end in a date: acme-chat-2025-01-01 or claude-x-20250929. */
export const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]*-\d{4}-?\d{2}-?\d{2}$/;

export async function upsertModel(
  ctx: ServiceContext,
  input: {
    id: string;
    displayName?: string | null;
    reasoning?: boolean | null;
    strict?: boolean | null;
    /** models tried in order when every route fails before the first byte; absent or null: none */
    fallbacks?: readonly string[] | null;
    type?: "chat" | "embedding" | null;
    enabled?: boolean | null;
  } & PriceInput,
) {
  if (!MODEL_ID.test(input.id) || input.id.length > 200) {
    throw badInput("a model ID is a full ID ending in a date, e.g. acme-chat-2025-01-01", "id");
  }
  const fallbacks = await checkFallbacks(ctx, input.id, input.fallbacks ?? []);
  const existing = await ctx.prisma.model.findUnique({ where: { id: input.id } });
  if (existing && existing.source === "config")
    throw new AppError("CONFLICT", "this model is managed by the configuration file");
  const data = {
    displayName: input.displayName ?? null,
    reasoning: input.reasoning ?? false,
    strict: input.strict ?? false,
    fallbacks,
    type: input.type ?? "chat",
    ...priceData(input),
    enabled: input.enabled ?? true,
  };
  const row = await ctx.prisma.$transaction(async (tx) => {
    const after = await tx.model.upsert({
      where: { id: input.id },
      create: { id: input.id, source: "api", ...data },
      update: data,
    });
    await audit(tx, ctx.actor, {
      action: existing ? "model.update" : "model.create",
      subjectType: "model",
      subjectId: input.id,
      before: existing,
      after,
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function deleteModel(ctx: ServiceContext, id: string) {
  const existing = await ctx.prisma.model.findUnique({ where: { id } });
  if (!existing) throw notFound("model");
  if (existing.source === "config") throw new AppError("CONFLICT", "this model is managed by the configuration file");
  await ctx.prisma.$transaction(async (tx) => {
    await tx.model.delete({ where: { id } });
    await audit(tx, ctx.actor, { action: "model.delete", subjectType: "model", subjectId: id, before: existing });
  });
  ctx.snapshotChanged();
}

function checkBaseUrl(url: string) {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badInput("not a URL", "baseUrl");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw badInput("the base URL must be http or https", "baseUrl");
  return url.replace(/\/+$/, "");
}

export async function upsertUpstream(
  ctx: ServiceContext,
  input: {
    id?: string | null;
    name: string;
    /** null or absent: direct */
    provider?: ProviderName | null;
    /** null or absent: implied by the provider */
    protocol?: OperatorProtocol | null;
    /** null or absent: the provider's default endpoint */
    baseUrl?: string | null;
    /** the provider's settings; null or absent: not set */
    apiVersion?: string | null;
    region?: string | null;
    project?: string | null;
    auth?: string | null;
    /** undefined: keep; null: remove; text: replace (each secret likewise) */
    apiKey?: string | null;
    accessKeyId?: string | null;
    secretAccessKey?: string | null;
    sessionToken?: string | null;
    serviceAccount?: string | null;
    /** a key pool instead of apiKey: undefined keeps it, a list replaces it (a key without apiKey keeps its secret) */
    keys?: readonly KeyInput[] | null;
    enabled?: boolean | null;
    connectTimeoutMs?: number | null;
    firstByteTimeoutMs?: number | null;
    idleTimeoutMs?: number | null;
  },
) {
  const name = input.name.trim();
  if (!name || name.length > 100) throw badInput("a name of 1 to 100 characters is needed", "name");
  const timeouts: Record<string, number> = {};
  for (const f of ["connectTimeoutMs", "firstByteTimeoutMs", "idleTimeoutMs"] as const) {
    const v = input[f];
    if (v === null || v === undefined) continue;
    if (!Number.isInteger(v) || v < 100 || v > 3_600_000) throw badInput(`${f} must be between 100 and 3600000`, f);
    timeouts[f] = v;
  }
  const provider = input.provider ?? "direct";
  const options: Partial<Record<ProviderOptionName, string>> = {};
  for (const k of PROVIDER_OPTIONS) {
    const v = input[k]?.trim();
    if (v) options[k] = v;
  }
  if (options.auth !== undefined && options.auth !== "key" && options.auth !== "entra")
    throw badInput("auth is key or entra", "auth");
  if (options.region !== undefined && !/^[a-z0-9-]+$/.test(options.region))
    throw badInput("a region name such as us-east-1", "region");
  const shape = checkUpstreamShape({
    provider,
    protocol: input.protocol ?? null,
    baseUrl: input.baseUrl ? checkBaseUrl(input.baseUrl) : null,
    options,
  });
  if ("problem" in shape) throw badInput(shape.problem, shape.field);
  for (const [name, max] of Object.entries(SECRET_MAX_LENGTH) as [keyof typeof SECRET_MAX_LENGTH, number][]) {
    const v = input[name];
    if (typeof v === "string" && v.length > max) throw badInput(`${name} is longer than ${max} characters`, name);
  }
  if (input.serviceAccount) checkServiceAccount(input.serviceAccount);
  const keys = input.keys == null ? null : checkKeys(input.keys, false);
  if (keys !== null && keys.length > 0 && input.apiKey) throw badInput("give apiKey or keys, not both", "keys");
  const data = {
    name,
    provider,
    protocol: input.protocol == null ? null : (enumName(input.protocol) as UpstreamProtocol),
    options,
    baseUrl: shape.baseUrl,
    enabled: input.enabled ?? true,
    ...timeouts,
    ...(input.apiKey === undefined
      ? {}
      : { apiKeyEnc: input.apiKey === null ? null : seal(ctx.masterKey, input.apiKey) }),
  };
  const secretsChanged = PROVIDER_SECRETS.some((k) => input[k] !== undefined);
  const row = await ctx.prisma.$transaction(async (tx) => {
    let before = null;
    let after;
    if (input.id) {
      before = await tx.upstream.findUnique({ where: { id: input.id } });
      if (!before) throw notFound("upstream");
      if (before.source === "config")
        throw new AppError("CONFLICT", "this upstream is managed by the configuration file");
      after = await tx.upstream.update({
        where: { id: input.id },
        data: secretsChanged ? { ...data, secretsEnc: sealedSecrets(ctx, before.secretsEnc, input) } : data,
      });
    } else {
      after = await tx.upstream.create({
        data: { ...data, secretsEnc: sealedSecrets(ctx, null, input), source: "api" },
      });
    }
    const pool = keys === null ? null : await replaceKeys(tx, ctx.masterKey, after.id, keys);
    // The credential itself never reaches the log: only whether there is one, and whether this call changed it.
    await audit(tx, ctx.actor, {
      action: before ? "upstream.update" : "upstream.create",
      subjectType: "upstream",
      subjectId: after.id,
      before: before && upstreamView(before),
      after: {
        ...upstreamView(after),
        apiKeyChanged: input.apiKey !== undefined,
        secretsChanged,
        ...(pool ? { keys: pool } : {}),
      },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

const upstreamView = ({
  apiKeyEnc,
  secretsEnc,
  ...rest
}: { apiKeyEnc: string | null; secretsEnc: string | null } & Record<string, unknown>) => ({
  ...rest,
  hasApiKey: apiKeyEnc !== null,
  hasSecrets: secretsEnc !== null,
});

/** The provider's secrets after this write: the kept ones, the replaced ones, without the removed ones. */
function sealedSecrets(
  ctx: ServiceContext,
  sealed: string | null,
  input: Partial<Record<ProviderSecretName, string | null>>,
): string | null {
  const secrets = sealed === null ? {} : (JSON.parse(open(ctx.masterKey, sealed)) as Record<string, string>);
  for (const k of PROVIDER_SECRETS) {
    const v = input[k];
    if (v === null) delete secrets[k];
    else if (v !== undefined) secrets[k] = v;
  }
  return Object.keys(secrets).length === 0 ? null : seal(ctx.masterKey, JSON.stringify(secrets));
}

/** Which of the provider's secrets an upstream has (names only). */
export function secretNamesOf(ctx: ServiceContext, u: { secretsEnc: string | null }): string[] {
  if (u.secretsEnc === null) return [];
  return Object.keys(JSON.parse(open(ctx.masterKey, u.secretsEnc)) as Record<string, string>).sort();
}

/** A Google credentials JSON, refused when it is not one (without echoing it). */
function checkServiceAccount(text: string) {
  let type: unknown;
  try {
    type = (JSON.parse(text) as { type?: unknown }).type;
  } catch {
    throw badInput("the service account is not JSON", "serviceAccount");
  }
  if (type !== "service_account" && type !== "authorized_user" && type !== "external_account")
    throw badInput("not a Google credentials file (its type is not service_account)", "serviceAccount");
}

export async function deleteUpstream(ctx: ServiceContext, id: string) {
  const existing = await ctx.prisma.upstream.findUnique({ where: { id } });
  if (!existing) throw notFound("upstream");
  if (existing.source === "config")
    throw new AppError("CONFLICT", "this upstream is managed by the configuration file");
  await ctx.prisma.$transaction(async (tx) => {
    await tx.upstream.delete({ where: { id } });
    await audit(tx, ctx.actor, {
      action: "upstream.delete",
      subjectType: "upstream",
      subjectId: id,
      before: upstreamView(existing),
    });
  });
  ctx.snapshotChanged();
}

export async function upsertRoute(
  ctx: ServiceContext,
  input: {
    modelId: string;
    upstreamId: string;
    upstreamModel: string;
    weight?: number | null;
    priority?: number | null;
  },
) {
  const weight = input.weight ?? 1;
  const priority = input.priority ?? 0;
  if (!Number.isInteger(weight) || weight < 0 || weight > 1000) throw badInput("weight must be 0..1000", "weight");
  if (!Number.isInteger(priority) || Math.abs(priority) > 1000)
    throw badInput("priority must be -1000..1000", "priority");
  if (!input.upstreamModel.trim()) throw badInput("the upstream model name is needed", "upstreamModel");
  if (!(await ctx.prisma.model.findUnique({ where: { id: input.modelId } }))) throw notFound("model");
  if (!(await ctx.prisma.upstream.findUnique({ where: { id: input.upstreamId } }))) throw notFound("upstream");
  const key = { modelId: input.modelId, upstreamId: input.upstreamId, upstreamModel: input.upstreamModel.trim() };
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.route.findUnique({ where: { modelId_upstreamId_upstreamModel: key } });
    const after = await tx.route.upsert({
      where: { modelId_upstreamId_upstreamModel: key },
      create: { ...key, weight, priority },
      update: { weight, priority },
    });
    await audit(tx, ctx.actor, {
      action: before ? "route.update" : "route.create",
      subjectType: "route",
      subjectId: after.id,
      before,
      after,
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function deleteRoute(ctx: ServiceContext, id: string) {
  await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.route.findUnique({ where: { id } });
    if (!before) throw notFound("route");
    await tx.route.delete({ where: { id } });
    await audit(tx, ctx.actor, { action: "route.delete", subjectType: "route", subjectId: id, before });
  });
  ctx.snapshotChanged();
}

const limit = (v: number | null | undefined, field: string) => {
  if (v !== null && v !== undefined && (!Number.isInteger(v) || v <= 0))
    throw badInput(`${field} must be positive`, field);
  return v;
};

export async function setAccountLimits(
  ctx: ServiceContext,
  accountId: string,
  input: { rpm?: number | null; tpm?: number | null; concurrency?: number | null },
) {
  const data = {
    rpm: limit(input.rpm, "rpm"),
    tpm: limit(input.tpm, "tpm"),
    concurrency: limit(input.concurrency, "concurrency"),
  };
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.account.findUnique({
      where: { id: accountId },
      select: { rpm: true, tpm: true, concurrency: true },
    });
    if (!before) throw notFound("account");
    const after = await tx.account.update({ where: { id: accountId }, data });
    await audit(tx, ctx.actor, {
      action: "account.limits",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before,
      after: { rpm: after.rpm, tpm: after.tpm, concurrency: after.concurrency },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function setAccountStatus(ctx: ServiceContext, accountId: string, status: AccountStatus) {
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.account.findUnique({ where: { id: accountId }, select: { status: true } });
    if (!before) throw notFound("account");
    const after = await tx.account.update({ where: { id: accountId }, data: { status } });
    if (status === "disabled") {
      // sign the customer's users out at once
      await tx.session.updateMany({ where: { user: { accountId }, revokedAt: null }, data: { revokedAt: new Date() } });
    }
    await audit(tx, ctx.actor, {
      action: "account.status",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before,
      after: { status },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

/** A signed correction (credit or debit) with a mandatory note, written to the ledger. */
export async function adjustBalance(ctx: ServiceContext, accountId: string, amountMicro: bigint, note: string) {
  if (amountMicro === 0n) throw badInput("the adjustment cannot be zero", "amount");
  if (!note.trim()) throw badInput("an adjustment needs a note", "note");
  const row = await ctx.prisma.$transaction(async (tx) => {
    const after = await applyLedger(tx, accountId, "adjustment", amountMicro, note.trim());
    await audit(tx, ctx.actor, {
      action: "account.adjust",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before: { balanceMicro: after.balanceMicro - amountMicro },
      after: { balanceMicro: after.balanceMicro, amountMicro, note: note.trim() },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}
