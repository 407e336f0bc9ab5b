import type { Invitation } from "../../generated/prisma/client.ts";
import { createInvitation, createUser, memberOf, removeUser } from "../../services/users.ts";
import { builder } from "../builder.ts";
import { accountIdFor, checkId, principalOf } from "../common.ts";
import { AccountRef } from "./account.ts";
import { UserRoleEnum } from "./enums.ts";
import { UserRef } from "./user.ts";

// Membership: an account's users and invitations (owners of the account and operators manage them).

export const InvitationRef = builder.objectRef<Invitation>("Invitation").implement({
  fields: (t) => ({
    id: t.exposeID("id"),
    email: t.exposeString("email"),
    role: t.field({ type: UserRoleEnum, resolve: (i) => i.role }),
    expiresAt: t.expose("expiresAt", { type: "DateTime" }),
    acceptedAt: t.expose("acceptedAt", { type: "DateTime", nullable: true }),
    revokedAt: t.expose("revokedAt", { type: "DateTime", nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

builder.prismaObjectFields(AccountRef, (t) => ({
  // Selected through the Prisma plugin: a list of accounts loads its members in one query, not one per account.
  members: t.field({
    type: [UserRef],
    description: "owners and operators only",
    select: { users: { orderBy: { createdAt: "asc" } } },
    resolve: (a, _args, ctx) => {
      accountIdFor(ctx, a.id, "manage");
      return a.users;
    },
  }),
  invitations: t.field({
    type: [InvitationRef],
    description: "owners and operators only",
    resolve: (a, _args, ctx) => {
      accountIdFor(ctx, a.id, "manage");
      return ctx.app.prisma.invitation.findMany({
        where: { accountId: a.id },
        orderBy: { createdAt: "desc" },
        take: 100,
      });
    },
  }),
}));

builder.queryFields((t) => ({
  users: t.field({
    type: [UserRef],
    authScopes: { operator: true },
    description: "Operators: users, optionally of one account.",
    args: { accountId: t.arg.id() },
    resolve: (_r, args, ctx) =>
      ctx.app.prisma.user.findMany({
        where: args.accountId ? { accountId: checkId(String(args.accountId), "account") } : {},
        orderBy: { createdAt: "asc" },
        take: 500,
      }),
  }),
}));

const CreatedInvitation = builder.objectRef<{ invitation: Invitation; token: string }>("CreatedInvitation").implement({
  fields: (t) => ({
    invitation: t.field({ type: InvitationRef, resolve: (r) => r.invitation }),
    token: t.exposeString("token", { description: "also mailed; shown once" }),
  }),
});

const InviteRoleEnum = builder.enumType("InviteRole", { values: ["member", "owner"] as const });

builder.mutationFields((t) => ({
  createUser: t.field({
    type: UserRef,
    authScopes: { operator: true },
    description: "Operators: creates a user with a password (operators have no account).",
    args: {
      email: t.arg.string({ required: true }),
      password: t.arg.string({ required: true }),
      role: t.arg({ type: UserRoleEnum, required: true }),
      accountId: t.arg.id(),
      name: t.arg.string(),
    },
    resolve: (_r, args, ctx) =>
      createUser(ctx.app, {
        email: args.email,
        password: args.password,
        role: args.role,
        name: args.name,
        accountId: args.accountId ? checkId(String(args.accountId), "account") : null,
      }),
  }),
  createInvitation: t.field({
    type: CreatedInvitation,
    authScopes: { authenticated: true },
    description: "Owners (for their account) and operators invite a member or owner by e-mail.",
    args: {
      email: t.arg.string({ required: true }),
      role: t.arg({ type: InviteRoleEnum, defaultValue: "member" }),
      accountId: t.arg.id(),
    },
    resolve: (_r, args, ctx) =>
      createInvitation(ctx.app, {
        accountId: accountIdFor(ctx, args.accountId ? String(args.accountId) : null, "manage"),
        email: args.email,
        role: args.role ?? "member",
      }),
  }),
  removeMember: t.boolean({
    authScopes: { authenticated: true },
    description: "Owners and operators remove a user from the account (not yourself).",
    args: { userId: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const target = await memberOf(ctx.app, checkId(String(args.userId), "user"));
      accountIdFor(ctx, target.accountId, "manage");
      await removeUser(ctx.app, target.id, { userId: principalOf(ctx).user.id });
      return true;
    },
  }),
}));
