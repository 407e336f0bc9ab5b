import type { Export } from "../../generated/prisma/client.ts";
import { startExport } from "../../exports/runner.ts";
import { notFound } from "../../services/errors.ts";
import { builder, isOperator } from "../builder.ts";
import { accountIdFor, checkId, principalOf } from "../common.ts";
import type { GqlContext } from "../context.ts";
import { ExportFormatEnum, ExportKindEnum, ExportStatusEnum } from "./enums.ts";
import { toFilter, UsageFilterInput } from "./usage.ts";

/** Who may see and download an export: the user who started it, an owner of its account, or an operator. */
export function mayReadExport(
  user: { id: string; role: string; accountId: string | null },
  operator: boolean,
  e: Pick<Export, "accountId" | "userId">,
) {
  if (operator) return true;
  if (e.accountId !== user.accountId) return false;
  return e.userId === user.id || user.role === "owner";
}

export const ExportRef = builder.objectRef<Export>("Export").implement({
  description: "A usage-log or audit-log export. Download a ready one at GET /api/exports/{id}/download.",
  fields: (t) => ({
    id: t.exposeID("id"),
    kind: t.field({ type: ExportKindEnum, resolve: (e) => e.kind }),
    format: t.field({ type: ExportFormatEnum, resolve: (e) => e.format }),
    status: t.field({ type: ExportStatusEnum, resolve: (e) => e.status }),
    rowCount: t.exposeInt("rowCount"),
    error: t.exposeString("error", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    finishedAt: t.expose("finishedAt", { type: "DateTime", nullable: true }),
    downloadUrl: t.string({
      nullable: true,
      resolve: (e) => (e.status === "ready" ? `/api/exports/${e.id}/download` : null),
    }),
  }),
});

async function exportFor(ctx: GqlContext, id: string) {
  const p = principalOf(ctx);
  const e = await ctx.app.prisma.export.findUnique({ where: { id: checkId(id, "export") } });
  if (!e || !mayReadExport(p.user, isOperator(ctx), e)) throw notFound("export");
  return e;
}

builder.queryFields((t) => ({
  exports: t.field({
    type: [ExportRef],
    authScopes: { authenticated: true },
    description: "Your exports (owners and operators: every export of the account), newest first.",
    args: { accountId: t.arg.id() },
    resolve: async (_r, args, ctx) => {
      const accountId = accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read");
      const p = principalOf(ctx);
      const all = isOperator(ctx) || p.user.role === "owner";
      return ctx.app.prisma.export.findMany({
        where: { accountId, ...(all ? {} : { userId: p.user.id }) },
        orderBy: { createdAt: "desc" },
        take: 100,
      });
    },
  }),
  export: t.field({
    type: ExportRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => exportFor(ctx, String(id)),
  }),
}));

builder.mutationFields((t) => ({
  startExport: t.field({
    type: ExportRef,
    authScopes: { authenticated: true },
    description: "Starts a background export of the usage log (pending → running → ready).",
    args: {
      format: t.arg({ type: ExportFormatEnum, required: true }),
      filter: t.arg({ type: UsageFilterInput }),
      accountId: t.arg.id(),
    },
    resolve: (_r, args, ctx) =>
      startExport(ctx.app, {
        accountId: accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "read"),
        userId: principalOf(ctx).user.id,
        format: args.format,
        filter: toFilter(args.filter),
      }),
  }),
}));
