import { audit, type AuditActor } from "../audit/record.ts";
import type { UserRole } from "../generated/prisma/client.ts";
import { normaliseEmail } from "../auth/login.ts";
import { hashPassword, passwordProblem } from "../auth/password.ts";
import { INVITE_PREFIX, randomToken, sha256 } from "../auth/tokens.ts";
import type { Mailer } from "../mail/mailer.ts";
import { invitationMail } from "../mail/templates.ts";
import type { Tx } from "./accounts.ts";
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

export interface NewUser {
  email: string;
  password: string;
  role: UserRole;
  accountId?: string | null;
  name?: string | null;
}

/** A new user's checked columns with the password hashed (slow: before any transaction); the role's account aside. */
export async function newUserOf(input: NewUser) {
  const accountId = input.accountId ?? null;
  const problem = passwordProblem(input.password);
  if (problem) throw badInput(problem, "password");
  const email = checkEmail(input.email);
  return {
    email,
    name: input.name ?? null,
    role: input.role,
    accountId,
    passwordHash: await hashPassword(input.password),
  };
}

const emailTaken = () => new AppError("CONFLICT", "a user with this e-mail already exists");

/** Writes a new user and the audit row in the caller's transaction; a taken e-mail is a CONFLICT. */
export async function insertUser(tx: Tx, actor: AuditActor | undefined, data: Awaited<ReturnType<typeof newUserOf>>) {
  if (await tx.user.findUnique({ where: { email: data.email } })) throw emailTaken();
  const user = await tx.user.create({ data, include: { account: true } });
  const { account: _account, ...row } = user;
  await audit(tx, actor, {
    action: "user.create",
    subjectType: "user",
    subjectId: user.id,
    accountId: data.accountId,
    after: row,
  });
  return user;
}

/** Creates a user with a password (operators sign customers up; the admin CLI and bootstrap use this too). */
export async function createUser(ctx: ServiceContext, input: NewUser) {
  checkRole(input.role, input.accountId ?? null);
  const data = await newUserOf(input);
  return ctx.prisma.$transaction((tx) => insertUser(tx, ctx.actor, data));
}

/** The member a user id names: a user of a customer account (operators and unknown ids are not found). */
export async function memberOf(ctx: ServiceContext, userId: string) {
  const user = await ctx.prisma.user.findUnique({ where: { id: userId } });
  if (!user || !user.accountId) throw notFound("user");
  return { ...user, accountId: user.accountId };
}

/** Removes a user from their account; who may is the caller's check, but nobody removes themselves. */
export async function removeUser(ctx: ServiceContext, userId: string, by?: { userId: string }) {
  if (by && by.userId === userId) throw new AppError("BAD_USER_INPUT", "you cannot remove yourself");
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

/** Writes an invitation (its token returned once, only its hash kept) and the audit row in the caller's transaction. */
export async function insertInvitation(
  tx: Tx,
  actor: AuditActor | undefined,
  input: { accountId: string; email: string; role: "member" | "owner" },
) {
  if (await tx.user.findUnique({ where: { email: input.email } })) throw emailTaken();
  const token = randomToken(INVITE_PREFIX);
  const invitation = await tx.invitation.create({
    data: {
      accountId: input.accountId,
      email: input.email,
      role: input.role,
      tokenHash: sha256(token),
      expiresAt: new Date(Date.now() + INVITATION_DAYS * 86_400_000),
    },
  });
  await audit(tx, actor, {
    action: "invitation.create",
    subjectType: "invitation",
    subjectId: invitation.id,
    accountId: input.accountId,
    after: invitation,
  });
  return { invitation, token };
}

/** Mails an invitation's token (after its transaction committed). */
export const mailInvitation = (mail: Mailer, to: string, accountName: string, token: string) =>
  mail.send(invitationMail(to, accountName, token, INVITATION_DAYS));

/** Invites someone into an account; the token is mailed and also returned once (to hand over another way). */
export async function createInvitation(
  ctx: ServiceContext & { mail: Mailer },
  input: { accountId: string; email: string; role: "member" | "owner" },
) {
  const address = checkEmail(input.email);
  const account = await ctx.prisma.account.findUnique({ where: { id: input.accountId } });
  if (!account) throw notFound("account");
  const created = await ctx.prisma.$transaction((tx) =>
    insertInvitation(tx, ctx.actor, { accountId: account.id, email: address, role: input.role }),
  );
  await mailInvitation(ctx.mail, address, account.name, created.token);
  return created;
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

/** Creates the first operator at start-up when there is none; never touches an existing one. */
export async function ensureOperator(ctx: ServiceContext, input: { email: string; password: string }) {
  const existing = await ctx.prisma.user.findFirst({ where: { role: "operator" }, orderBy: { createdAt: "asc" } });
  if (existing) return { user: existing, created: false };
  const user = await createUser(ctx, { email: input.email, password: input.password, role: "operator" });
  return { user, created: true };
}
