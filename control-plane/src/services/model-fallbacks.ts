import type { ServiceContext } from "./context.ts";
import { badInput } from "./errors.ts";

/** At most this many fallbacks per model (the request's own are bounded apart, data-plane/src/server/fallbacks.ts). */
export const MAX_MODEL_FALLBACKS = 10;

/** A model's fallbacks: existing models, not itself, each once, at most MAX_MODEL_FALLBACKS. */
export async function checkFallbacks(ctx: ServiceContext, id: string, fallbacks: readonly string[]): Promise<string[]> {
  const list = fallbacks.map((f) => f.trim());
  if (list.length > MAX_MODEL_FALLBACKS) throw badInput(`at most ${MAX_MODEL_FALLBACKS} fallbacks`, "fallbacks");
  if (list.includes(id)) throw badInput("a model cannot be its own fallback", "fallbacks");
  if (new Set(list).size !== list.length) throw badInput("a fallback is named twice", "fallbacks");
  if (list.length === 0) return list;
  const known = await ctx.prisma.model.findMany({ where: { id: { in: list } }, select: { id: true } });
  const missing = list.filter((f) => !known.some((k) => k.id === f));
  if (missing.length > 0) throw badInput(`unknown model ${missing.join(", ")}`, "fallbacks");
  return list;
}
