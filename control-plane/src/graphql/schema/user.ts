import type { Account, PersonalAccessToken, User } from "../../generated/prisma/client.ts";
import { audit } from "../../audit/record.ts";
import { login, verifySecondStep } from "../../auth/login.ts";
import { createSession, revokeSession } from "../../auth/sessions.ts";
import {
  remainingRecoveryCodes,
  createPersonalAccessToken,
  revokePersonalAccessToken,
} from "../../services/security.ts";
import { acceptInvitation } from "../../services/users.ts";
import { AppError } from "../../services/errors.ts";
import { builder } from "../builder.ts";
import { checkId, principalOf } from "../common.ts";
import { AccountRef } from "./account.ts";
import { TokenScopeEnum, UserRoleEnum } from "./enums.ts";

export type UserRow = User & { account?: Account | null };

export const UserRef = builder.objectRef<UserRow>("User");
UserRef.implement({
  description: "A person who signs in to the console.",
  fields: (t) => ({
    id: t.exposeID("id"),
    email: t.exposeString("email"),
    name: t.exposeString("name", { nullable: true }),
    role: t.field({ type: UserRoleEnum, resolve: (u) => u.role }),
    emailVerified: t.boolean({ resolve: (u) => u.emailVerifiedAt !== null }),
    emailVerifiedAt: t.expose("emailVerifiedAt", { type: "DateTime", nullable: true }),
    twoStepEnabled: t.boolean({ resolve: (u) => u.totpEnabledAt !== null }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    account: t.field({
      type: AccountRef,
      nullable: true,
      resolve: async (u, _a, ctx) =>
        u.account !== undefined
          ? u.account
          : u.accountId
            ? ctx.app.prisma.account.findUnique({ where: { id: u.accountId } })
            : null,
    }),
  }),
});

/** The signed-in user's own view: adds what only they should read. */
const ViewerRef = builder.objectRef<UserRow>("Viewer").implement({
  description: "The signed-in user.",
  fields: (t) => ({
    user: t.field({ type: UserRef, resolve: (u) => u }),
    recoveryCodesLeft: t.int({ resolve: (u, _a, ctx) => remainingRecoveryCodes(ctx.app, u.id) }),
    via: t.string({ description: "session or token", resolve: (_u, _a, ctx) => principalOf(ctx).via }),
    tokenScopes: t.field({
      type: [TokenScopeEnum],
      nullable: true,
      description: "the scopes of the access token in use; null for a browser session",
      resolve: (_u, _a, ctx) => principalOf(ctx).tokenScopes,
    }),
  }),
});

export const PatRef = builder.objectRef<PersonalAccessToken>("PersonalAccessToken").implement({
  description: "A personal access token (mgp_…) for scripts and the admin CLI. The value is shown once.",
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    prefix: t.exposeString("prefix"),
    scopes: t.field({ type: [TokenScopeEnum], resolve: (p) => p.scopes as ("read" | "write" | "operator")[] }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    lastUsedAt: t.expose("lastUsedAt", { type: "DateTime", nullable: true }),
    expiresAt: t.expose("expiresAt", { type: "DateTime", nullable: true }),
    revokedAt: t.expose("revokedAt", { type: "DateTime", nullable: true }),
  }),
});

const LoginResult = builder.objectRef<{ secondStepRequired: boolean; user: UserRow | null }>("LoginResult").implement({
  fields: (t) => ({
    secondStepRequired: t.exposeBoolean("secondStepRequired", {
      description: "true: a pending session is set; complete it with verifySecondStep(code)",
    }),
    user: t.field({
      type: UserRef,
      nullable: true,
      description: "null until the second step passes",
      resolve: (r) => r.user,
    }),
  }),
});

const CreatedPat = builder
  .objectRef<{ token: string; accessToken: PersonalAccessToken }>("CreatedPersonalAccessToken")
  .implement({
    fields: (t) => ({
      token: t.exposeString("token", { description: "the secret value; shown only now" }),
      accessToken: t.field({ type: PatRef, resolve: (r) => r.accessToken }),
    }),
  });

builder.queryFields((t) => ({
  me: t.field({
    type: ViewerRef,
    nullable: true,
    description: "The signed-in user, or null.",
    resolve: (_r, _a, ctx) => ctx.principal?.user ?? null,
  }),
  personalAccessTokens: t.field({
    type: [PatRef],
    authScopes: { authenticated: true },
    resolve: (_r, _a, ctx) =>
      ctx.app.prisma.personalAccessToken.findMany({
        where: { userId: principalOf(ctx).user.id },
        orderBy: { createdAt: "desc" },
      }),
  }),
}));

builder.mutationFields((t) => ({
  login: t.field({
    type: LoginResult,
    description:
      "Signs in with e-mail and password and sets the session cookie (pending when two-step verification is on).",
    args: { email: t.arg.string({ required: true }), password: t.arg.string({ required: true }) },
    resolve: async (_r, { email, password }, ctx) => {
      const result = await login(ctx.app.prisma, email, password, ctx.clientIp);
      ctx.setSessionCookie(result.token);
      if (result.secondStepRequired) return { secondStepRequired: true, user: null };
      const user = await ctx.app.prisma.user.findUniqueOrThrow({
        where: { id: result.userId },
        include: { account: true },
      });
      return { secondStepRequired: false, user };
    },
  }),
  verifySecondStep: t.field({
    type: UserRef,
    description: "Completes a pending sign-in with a TOTP code or a recovery code.",
    authScopes: { pendingSecondStep: true },
    args: { code: t.arg.string({ required: true }) },
    resolve: async (_r, { code }, ctx) => {
      const pending = ctx.auth.pending!;
      const { token } = await verifySecondStep(
        ctx.app.prisma,
        ctx.app.masterKey,
        { sessionId: pending.sessionId, userId: pending.user.id },
        code,
        ctx.clientIp,
      );
      ctx.setSessionCookie(token);
      return ctx.app.prisma.user.findUniqueOrThrow({ where: { id: pending.user.id }, include: { account: true } });
    },
  }),
  logout: t.boolean({
    description: "Ends the current session (also a pending one) and clears the cookie.",
    resolve: async (_r, _a, ctx) => {
      const id = ctx.principal?.sessionId ?? ctx.auth.pending?.sessionId;
      if (id) {
        await revokeSession(ctx.app.prisma, id);
        // Who signed out, from where; a sign-in halfway through (password given, code not yet) is the same user.
        const user = ctx.principal?.user ?? ctx.auth.pending!.user;
        await audit(
          ctx.app.prisma,
          ctx.app.actor?.type === "user"
            ? ctx.app.actor
            : { type: "user", userId: user.id, email: user.email, via: "session", address: ctx.clientIp },
          {
            action: "auth.logout",
            subjectType: "user",
            subjectId: user.id,
            accountId: user.accountId,
            after: { secondStepPending: ctx.principal === null },
          },
        );
      }
      ctx.setSessionCookie(null);
      return true;
    },
  }),
  acceptInvitation: t.field({
    type: UserRef,
    description: "Creates the invited user with a password and signs them in.",
    args: {
      token: t.arg.string({ required: true }),
      password: t.arg.string({ required: true }),
      name: t.arg.string(),
    },
    resolve: async (_r, args, ctx) => {
      if (ctx.principal) throw new AppError("BAD_USER_INPUT", "sign out before accepting an invitation");
      const user = await acceptInvitation(ctx.app, { token: args.token, password: args.password, name: args.name });
      const { token } = await createSession(ctx.app.prisma, user.id, false);
      ctx.setSessionCookie(token);
      return user;
    },
  }),
  createPersonalAccessToken: t.field({
    type: CreatedPat,
    authScopes: { session: true },
    args: {
      name: t.arg.string({ required: true }),
      scopes: t.arg({ type: [TokenScopeEnum], required: true }),
      expiresAt: t.arg({ type: "DateTime" }),
    },
    resolve: async (_r, args, ctx) => {
      const { token, row } = await createPersonalAccessToken(ctx.app, principalOf(ctx).user, {
        name: args.name,
        scopes: args.scopes,
        expiresAt: args.expiresAt,
      });
      return { token, accessToken: row };
    },
  }),
  revokePersonalAccessToken: t.field({
    type: PatRef,
    authScopes: { authenticated: true },
    description: "Revokes one of your tokens (a token may revoke itself).",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) =>
      revokePersonalAccessToken(ctx.app, principalOf(ctx).user.id, checkId(String(id), "access token")),
  }),
}));
