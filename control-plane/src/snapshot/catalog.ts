import { OPERATOR_PROTOCOLS, fromEnumName, type ModelSnapshot } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import type { Route, Upstream, UpstreamKey } from "../generated/prisma/client.ts";
import { routeProtocol } from "../services/upstream-provider.ts";

type RouteSnapshot = ModelSnapshot["routes"][number];

/**
 * One route as the data planes call it: the wire protocol its provider speaks for this model, the provider's
 * settings and sealed secrets. A route whose provider cannot serve its model (refused when written, so only
 * an upstream changed since) is left out rather than failing every call.
 */
function routeOf(u: Upstream & { keys: UpstreamKey[] }, r: Route): RouteSnapshot[] {
  let protocol: RouteSnapshot["protocol"];
  try {
    protocol = routeProtocol(
      u.provider,
      u.protocol === null ? null : fromEnumName(OPERATOR_PROTOCOLS, u.protocol),
      r.upstreamModel,
    );
  } catch {
    return [];
  }
  const route: RouteSnapshot = {
    upstream: u.name,
    protocol,
    baseUrl: u.baseUrl,
    apiKeyEnc: u.apiKeyEnc,
    upstreamModel: r.upstreamModel,
    weight: r.weight,
    priority: r.priority,
    connectTimeoutMs: u.connectTimeoutMs,
    firstByteTimeoutMs: u.firstByteTimeoutMs,
    idleTimeoutMs: u.idleTimeoutMs,
  };
  // Only what differs from a direct upstream travels: snapshots of direct upstreams stay as they were.
  if (u.provider !== "direct") route.provider = u.provider;
  const options = u.options as Record<string, string>;
  if (Object.keys(options).length > 0) route.providerOptions = options;
  if (u.secretsEnc !== null) route.secretsEnc = u.secretsEnc;
  // A key pool (docs/routing.md): disabled keys travel too, so a data plane's own view of them is overruled.
  if (u.keys.length > 0)
    route.keys = u.keys.map((k) => ({ id: k.id, apiKeyEnc: k.apiKeyEnc, weight: k.weight, enabled: k.enabled }));
  return [route];
}

const str = (n: bigint) => n.toString();

/** The model catalog the data planes route by: enabled models with the routes of their enabled upstreams. */
export async function buildCatalog(prisma: Db): Promise<Record<string, ModelSnapshot>> {
  const models = await prisma.model.findMany({
    where: { enabled: true },
    include: { routes: { include: { upstream: { include: { keys: { orderBy: { position: "asc" } } } } } } },
  });
  const catalog: Record<string, ModelSnapshot> = {};
  for (const m of models) {
    catalog[m.id] = {
      id: m.id,
      displayName: m.displayName,
      reasoning: m.reasoning,
      strict: m.strict,
      type: m.type,
      // Only a model with fallbacks carries the field: snapshots of the others stay as they were.
      ...(m.fallbacks.length > 0 ? { fallbacks: m.fallbacks } : {}),
      createdAt: m.createdAt.toISOString(),
      price: {
        input: str(m.inputPriceMicro),
        output: str(m.outputPriceMicro),
        cachedInput: m.cachedInputPriceMicro === null ? null : str(m.cachedInputPriceMicro),
        cacheWrite5m: m.cacheWrite5mPriceMicro === null ? null : str(m.cacheWrite5mPriceMicro),
        cacheWrite1h: m.cacheWrite1hPriceMicro === null ? null : str(m.cacheWrite1hPriceMicro),
      },
      routes: m.routes.filter((r) => r.upstream.enabled).flatMap((r) => routeOf(r.upstream, r)),
    };
  }
  return catalog;
}
