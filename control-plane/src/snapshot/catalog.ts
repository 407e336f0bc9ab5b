import type { ModelSnapshot } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";

const str = (n: bigint) => n.toString();

/** The model catalog the data planes route by: enabled models with the routes of their enabled upstreams. */
export async function buildCatalog(prisma: Db): Promise<Record<string, ModelSnapshot>> {
  const models = await prisma.model.findMany({
    where: { enabled: true },
    include: { routes: { include: { upstream: true } } },
  });
  const catalog: Record<string, ModelSnapshot> = {};
  for (const m of models) {
    catalog[m.id] = {
      id: m.id,
      displayName: m.displayName,
      reasoning: m.reasoning,
      strict: m.strict,
      type: m.type,
      createdAt: m.createdAt.toISOString(),
      price: {
        input: str(m.inputPriceMicro),
        output: str(m.outputPriceMicro),
        cachedInput: m.cachedInputPriceMicro === null ? null : str(m.cachedInputPriceMicro),
        cacheWrite5m: m.cacheWrite5mPriceMicro === null ? null : str(m.cacheWrite5mPriceMicro),
        cacheWrite1h: m.cacheWrite1hPriceMicro === null ? null : str(m.cacheWrite1hPriceMicro),
      },
      routes: m.routes
        .filter((r) => r.upstream.enabled)
        .map((r) => ({
          upstream: r.upstream.name,
          protocol: r.upstream.protocol === "openai_responses" ? ("openai-responses" as const) : r.upstream.protocol,
          baseUrl: r.upstream.baseUrl,
          apiKeyEnc: r.upstream.apiKeyEnc,
          upstreamModel: r.upstreamModel,
          weight: r.weight,
          priority: r.priority,
          connectTimeoutMs: r.upstream.connectTimeoutMs,
          firstByteTimeoutMs: r.upstream.firstByteTimeoutMs,
          idleTimeoutMs: r.upstream.idleTimeoutMs,
        })),
    };
  }
  return catalog;
}
