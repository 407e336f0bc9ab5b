import type { ServiceContext } from "../services/context.ts";
import { createUser } from "../services/users.ts";

/** Creates the first operator at start-up when there is none; never touches an existing one. */
export async function ensureOperator(ctx: ServiceContext, input: { email: string; password: string }) {
  const existing = await ctx.prisma.user.findFirst({ where: { role: "operator" }, orderBy: { createdAt: "asc" } });
  if (existing) return { user: existing, created: false };
  const user = await createUser(ctx, { email: input.email, password: input.password, role: "operator" });
  return { user, created: true };
}
