import type { AuditLog } from "../../generated/prisma/client.ts";
import { auditPage, MAX_AUDIT_PAGE, type AuditFilter } from "../../audit/query.ts";
import { startAuditExport } from "../../exports/runner.ts";
import { builder, isOperator } from "../builder.ts";
import { accountIdFor, checkId, clampFirst, principalOf } from "../common.ts";
import type { GqlContext } from "../context.ts";
import { ExportFormatEnum } from "./enums.ts";
import { ExportRef } from "./export.ts";

// The audit log: operators read every row, owners their account's rows only; members not at all.

const AuditEntryRef = builder.objectRef<AuditLog>("AuditEntry").implement({
  description:
    "One audited change or sign-in: who, when, from where, what, and the values before and after (never a secret).",
  fields: (t) => ({
    id: t.exposeID("id"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    actorType: t.exposeString("actorType", { description: "user, admin_token, cli, anonymous or system" }),
    actorUserId: t.exposeID("actorUserId", { nullable: true }),
    actorEmail: t.exposeString("actorEmail", { nullable: true, description: "the actor's e-mail when it acted" }),
    actorVia: t.exposeString("actorVia", { nullable: true, description: "session or token" }),
    actorAddress: t.exposeString("actorAddress", { nullable: true, description: "the client address" }),
    action: t.exposeString("action", { description: "e.g. account.topup, api_key.update, auth.login_failed" }),
    accountId: t.exposeID("accountId", { nullable: true, description: "the customer account concerned" }),
    subjectType: t.exposeString("subjectType"),
    subjectId: t.exposeString("subjectId", { nullable: true }),
    before: t.string({
      nullable: true,
      description: "JSON text",
      resolve: (r) => (r.before === null ? null : JSON.stringify(r.before)),
    }),
    after: t.string({
      nullable: true,
      description: "JSON text",
      resolve: (r) => (r.after === null ? null : JSON.stringify(r.after)),
    }),
  }),
});

const AuditPage = builder
  .objectRef<{ nodes: AuditLog[]; hasNextPage: boolean; endCursor: string | null }>("AuditPage")
  .implement({
    fields: (t) => ({
      nodes: t.field({ type: [AuditEntryRef], resolve: (p) => p.nodes }),
      hasNextPage: t.exposeBoolean("hasNextPage"),
      endCursor: t.exposeString("endCursor", { nullable: true, description: "pass as `after` for the next page" }),
    }),
  });

const AuditFilterInput = builder.inputType("AuditFilter", {
  fields: (t) => ({
    accountId: t.id({ description: "operators: one account's rows (owners always see only their own)" }),
    actorUserId: t.id(),
    actorType: t.string({ description: "user, admin_token, cli, anonymous or system" }),
    action: t.string({ description: "exact (account.topup) or a family ending in .* (account.*)" }),
    subjectType: t.string(),
    subjectId: t.string(),
    from: t.field({ type: "DateTime", description: "inclusive" }),
    to: t.field({ type: "DateTime", description: "exclusive" }),
  }),
});

type FilterArg =
  | {
      accountId?: string | number | null;
      actorUserId?: string | number | null;
      actorType?: string | null;
      action?: string | null;
      subjectType?: string | null;
      subjectId?: string | null;
      from?: Date | null;
      to?: Date | null;
    }
  | null
  | undefined;

/** The filter a caller may run: an owner's is pinned to their account; an operator's names one or none. */
function scopedFilter(ctx: GqlContext, f: FilterArg): AuditFilter {
  const requested = f?.accountId === null || f?.accountId === undefined ? null : String(f.accountId);
  const accountId = isOperator(ctx)
    ? requested
      ? checkId(requested, "account")
      : null
    : accountIdFor(ctx, requested, "manage");
  return {
    accountId,
    actorUserId: f?.actorUserId ? checkId(String(f.actorUserId), "user") : null,
    actorType: f?.actorType ?? null,
    action: f?.action ?? null,
    subjectType: f?.subjectType ?? null,
    subjectId: f?.subjectId ?? null,
    from: f?.from ?? null,
    to: f?.to ?? null,
  };
}

builder.queryFields((t) => ({
  auditLog: t.field({
    type: AuditPage,
    authScopes: { authenticated: true },
    description: "The audit log, newest first, with cursor pagination. Operators: every row; owners: their account's.",
    args: { filter: t.arg({ type: AuditFilterInput }), first: t.arg.int(), after: t.arg.string() },
    resolve: (_r, args, ctx) =>
      auditPage(
        ctx.app,
        scopedFilter(ctx, args.filter),
        clampFirst(args.first, 50, MAX_AUDIT_PAGE),
        args.after,
        isOperator(ctx),
      ),
  }),
}));

builder.mutationFields((t) => ({
  startAuditExport: t.field({
    type: ExportRef,
    authScopes: { authenticated: true },
    description:
      "Starts a background export of the audit log (as startExport does for usage); owners: their account's rows.",
    args: { format: t.arg({ type: ExportFormatEnum, required: true }), filter: t.arg({ type: AuditFilterInput }) },
    resolve: (_r, args, ctx) => {
      const filter = scopedFilter(ctx, args.filter);
      return startAuditExport(ctx.app, {
        accountId: filter.accountId ?? null,
        userId: principalOf(ctx).user.id,
        format: args.format,
        filter,
      });
    },
  }),
}));
