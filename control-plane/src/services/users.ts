import { audit } from "../audit/record.ts";
import type { UserRole } from "../generated/prisma/client.ts";
import { normaliseEmail } from "../auth/login.ts";
import { hashPassword, passwordProblem } from "../auth/password.ts";
import { INVITE_PREFIX, randomToken, sha256 } from "../auth/tokens.ts";
import type { Mailer } from "../mail/mailer.ts";
import { invitationMail } from "../mail/templates.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, badInput, notFound } from "./errors.ts";

export const INVITATION_DAYS = 7;
const email = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function checkEmail(text: string): string {
  const e = normaliseEmail(text);
  if (!email.test(e) || e.length > 254) throw badInput("not an e-mail address", "email");
  return e;
}

function checkRole(role: UserRole, accountId: string | null) {
  if (role === "operator" && accountId) throw badInput("operators belong to no customer account", "role");
  if (role !== "operator" && !accountId) throw badInput("members and owners need an account", "accountId");
}

/** Creates a user with a password (operators sign customers up; the admin CLI and bootstrap use this too). */
export async function createUser(
  ctx: ServiceContext,
  input: { email: string; password: string; role: UserRole; accountId?: string | null; name?: string | null },
) {
  const accountId = input.accountId ?? null;
  checkRole(input.role, accountId);
  const problem = passwordProblem(input.password);
  if (problem) throw badInput(problem, "password");
  const address = checkEmail(input.email);
  if (await ctx.prisma.user.findUnique({ where: { email: address } })) {
    throw new AppError("CONFLICT", "a user with this e-mail already exists");
  }
  const passwordHash = await hashPassword(input.password);
  return ctx.prisma.$transaction(async (tx) => {
    const user = await tx.user.create({
      data: { email: address, name: input.name ?? null, role: input.role, accountId, passwordHash },
      include: { account: true },
    });
    const { account: _account, ...row } = user;
    await audit(tx, ctx.actor, {
      action: "user.create",
      subjectType: "user",
      subjectId: user.id,
      accountId,
      after: row,
    });
    return user;
  });
}

/** Removes a user from their account (owners and operators; the caller checks who may). */
export async function removeUser(ctx: ServiceContext, userId: string) {
  await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: userId } });
    if (!before) throw notFound("user");
    await tx.user.delete({ where: { id: userId } });
    await audit(tx, ctx.actor, {
      action: "user.remove",
      subjectType: "user",
      subjectId: userId,
      accountId: before.accountId,
      before,
    });
  });
}

/** Invites someone into an account; the token is mailed and also returned once (to hand over another way). */
export async function createInvitation(
  ctx: ServiceContext & { mail: Mailer },
  input: { accountId: string; email: string; role: "member" | "owner" },
) {
  const address = checkEmail(input.email);
  const account = await ctx.prisma.account.findUnique({ where: { id: input.accountId } });
  if (!account) throw notFound("account");
  if (await ctx.prisma.user.findUnique({ where: { email: address } })) {
    throw new AppError("CONFLICT", "a user with this e-mail already exists");
  }
  const token = randomToken(INVITE_PREFIX);
  const invitation = await ctx.prisma.$transaction(async (tx) => {
    const row = await tx.invitation.create({
      data: {
        accountId: account.id,
        email: address,
        role: input.role,
        tokenHash: sha256(token),
        expiresAt: new Date(Date.now() + INVITATION_DAYS * 86_400_000),
      },
    });
    await audit(tx, ctx.actor, {
      action: "invitation.create",
      subjectType: "invitation",
      subjectId: row.id,
      accountId: account.id,
      after: row,
    });
    return row;
  });
  await ctx.mail.send(invitationMail(address, account.name, token, INVITATION_DAYS));
  return { invitation, token };
}

/** Revokes an invitation not yet accepted; its token stops working at once. */
export async function revokeInvitation(ctx: ServiceContext, id: string) {
  return ctx.prisma.$transaction(async (tx) => {
    const done = await tx.invitation.updateMany({
      where: { id, acceptedAt: null, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (done.count !== 1) throw new AppError("BAD_USER_INPUT", "the invitation was already accepted or revoked");
    const after = await tx.invitation.findUniqueOrThrow({ where: { id } });
    await audit(tx, ctx.actor, {
      action: "invitation.revoke",
      subjectType: "invitation",
      subjectId: id,
      accountId: after.accountId,
      before: { revokedAt: null },
      after,
    });
    return after;
  });
}

/** Turns an invitation into a user; single use, expiring. */
export async function acceptInvitation(
  ctx: ServiceContext,
  input: { token: string; password: string; name?: string | null },
) {
  const invitation = await ctx.prisma.invitation.findUnique({ where: { tokenHash: sha256(input.token.trim()) } });
  if (!invitation || invitation.acceptedAt || invitation.revokedAt || invitation.expiresAt.getTime() <= Date.now()) {
    throw new AppError("BAD_USER_INPUT", "the invitation is invalid, expired, revoked or already used", {
      field: "token",
    });
  }
  const problem = passwordProblem(input.password);
  if (problem) throw badInput(problem, "password");
  const passwordHash = await hashPassword(input.password);
  return ctx.prisma.$transaction(async (tx) => {
    const claimed = await tx.invitation.updateMany({
      where: { id: invitation.id, acceptedAt: null, revokedAt: null },
      data: { acceptedAt: new Date() },
    });
    if (claimed.count !== 1) throw badInput("the invitation was already used", "token");
    if (await tx.user.findUnique({ where: { email: invitation.email } })) {
      throw new AppError("CONFLICT", "a user with this e-mail already exists");
    }
    const user = await tx.user.create({
      data: {
        email: invitation.email,
        name: input.name ?? null,
        role: invitation.role,
        accountId: invitation.accountId,
        passwordHash,
        // not marked verified: the token may have been handed over outside e-mail
      },
      include: { account: true },
    });
    const { account: _account, ...row } = user;
    // the one acting is the invited person, who exists from now on
    await audit(
      tx,
      { ...ctx.actor, type: "user", userId: user.id, email: user.email },
      {
        action: "invitation.accept",
        subjectType: "user",
        subjectId: user.id,
        accountId: invitation.accountId,
        after: { ...row, invitationId: invitation.id },
      },
    );
    return user;
  });
}
