import { enumName, seal } from "@modelgate/data-plane";
import type { UpstreamProtocol } from "../generated/prisma/client.ts";
import { PROVIDER_OPTIONS, PROVIDER_SECRETS, checkUpstreamShape } from "../services/upstream-provider.ts";
import { audit } from "../audit/record.ts";
import { replaceKeys } from "../services/upstream-keys.ts";
import { parseAmount } from "../services/money.ts";
import type { ServiceContext } from "../services/context.ts";
import type { GatewayConfig } from "./schema.ts";

export const DEMO_MODEL_ID = "demo-chat-2025-01-01";

/** With no config at all, the built-in demo upstream and model, so the first call works offline. */
export const demoConfig = (): GatewayConfig => ({
  upstreams: [{ name: "demo", protocol: "demo", baseUrl: "demo://local" }],
  models: [
    {
      id: DEMO_MODEL_ID,
      displayName: "Demo chat",
      reasoning: false,
      strict: false,
      fallbacks: [],
      type: "chat",
      price: { input: 0.5, output: 1.5 },
      routes: [{ upstream: "demo", model: DEMO_MODEL_ID, weight: 1, priority: 0 }],
    },
  ],
});

/**
 * Makes the database match the config file: upstreams and models named there are created or updated and
 * their routes replaced; records the file once declared but no longer does are removed. Records created
 * through the API (source "api") are left alone, so the file and the API can edit side by side.
 */
export async function syncConfig(
  ctx: ServiceContext,
  config: GatewayConfig,
  source: "config" | "builtin" = "config",
): Promise<void> {
  await ctx.prisma.$transaction(async (tx) => {
    const upstreamIds = new Map<string, string>();
    for (const u of config.upstreams) {
      const options = pickDefined(u, PROVIDER_OPTIONS);
      const secrets = pickDefined(u, PROVIDER_SECRETS);
      const shape = checkUpstreamShape({
        provider: u.provider ?? "direct",
        protocol: u.protocol ?? null,
        baseUrl: u.baseUrl ?? null,
        options,
      });
      if ("problem" in shape) throw new Error(`upstream ${u.name}: ${shape.problem}`); // parseConfig checked it
      const data = {
        // The database's enum names cannot hold a hyphen; the value it stores is still `openai-responses`.
        protocol: u.protocol === undefined ? null : (enumName(u.protocol) as UpstreamProtocol),
        provider: u.provider ?? "direct",
        options,
        baseUrl: shape.baseUrl,
        apiKeyEnc: u.apiKey ? seal(ctx.masterKey, u.apiKey) : null,
        secretsEnc: Object.keys(secrets).length > 0 ? seal(ctx.masterKey, JSON.stringify(secrets)) : null,
        connectTimeoutMs: u.timeouts?.connectMs ?? 5_000,
        firstByteTimeoutMs: u.timeouts?.firstByteMs ?? 60_000,
        idleTimeoutMs: u.timeouts?.idleMs ?? 120_000,
        enabled: true,
        source,
      };
      const row = await tx.upstream.upsert({
        where: { name: u.name },
        create: { name: u.name, ...data },
        update: data,
      });
      upstreamIds.set(u.name, row.id);
      await replaceKeys(tx, ctx.masterKey, row.id, u.keys ?? []);
    }
    for (const m of config.models) {
      const data = {
        displayName: m.displayName ?? null,
        reasoning: m.reasoning,
        strict: m.strict,
        fallbacks: m.fallbacks,
        type: m.type,
        inputPriceMicro: parseAmount(m.price.input),
        outputPriceMicro: parseAmount(m.price.output),
        cachedInputPriceMicro: m.price.cachedInput === undefined ? null : parseAmount(m.price.cachedInput),
        cacheWrite5mPriceMicro: m.price.cacheWrite5m === undefined ? null : parseAmount(m.price.cacheWrite5m),
        cacheWrite1hPriceMicro: m.price.cacheWrite1h === undefined ? null : parseAmount(m.price.cacheWrite1h),
        enabled: true,
        source,
      };
      await tx.model.upsert({ where: { id: m.id }, create: { id: m.id, ...data }, update: data });
      await tx.route.deleteMany({ where: { modelId: m.id } });
      await tx.route.createMany({
        data: m.routes.map((r) => ({
          modelId: m.id,
          upstreamId: upstreamIds.get(r.upstream)!,
          upstreamModel: r.model,
          weight: r.weight,
          priority: r.priority,
        })),
      });
    }
    const models = await tx.model.deleteMany({ where: { source, id: { notIn: config.models.map((m) => m.id) } } });
    const upstreams = await tx.upstream.deleteMany({
      where: { source, name: { notIn: config.upstreams.map((u) => u.name) } },
    });
    // The file's catalogue as applied (start-up, hot reload, SIGHUP): names and IDs only, never a credential.
    if (source === "config") {
      await audit(tx, ctx.actor, {
        action: "config.sync",
        subjectType: "config",
        after: {
          upstreams: config.upstreams.map((u) => u.name),
          models: config.models.map((m) => m.id),
          removedModels: models.count,
          removedUpstreams: upstreams.count,
        },
      });
    }
  });
  ctx.snapshotChanged();
}

/** The fields of `names` the upstream gives, as strings. */
function pickDefined<K extends string>(u: Partial<Record<K, string>>, names: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const k of names) if (u[k] !== undefined) out[k] = u[k];
  return out;
}
