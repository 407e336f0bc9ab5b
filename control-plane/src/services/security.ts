import { open, seal } from "@modelgate/data-plane";
import { audit } from "../audit/record.ts";
import { checkSecondFactor, normaliseEmail } from "../auth/login.ts";
import { hashPassword, passwordProblem, verifyPassword } from "../auth/password.ts";
import { TOKEN_SCOPES, type TokenScope } from "../auth/principal.ts";
import { revokeOtherSessions } from "../auth/sessions.ts";
import { hmacCode, PAT_PREFIX, randomToken, recoveryCode, safeEqualHex, sha256, sixDigitCode } from "../auth/tokens.ts";
import { STEP_UP_POLICY, stepUpKey, succeeded, takeAttempt, throttled } from "../auth/throttle.ts";
import { newTotpSecret, totpStep, totpUri } from "../auth/totp.ts";
import type { Mailer } from "../mail/mailer.ts";
import { passwordChangedMail, verificationMail } from "../mail/templates.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, badInput, notFound } from "./errors.ts";
import { checkEmail } from "./users.ts";

type Ctx = ServiceContext & { mail: Mailer };

// ---- password ----

/**
 * Needs the current password, and a second-factor code when two-step verification is on (a stolen session
 * alone cannot take the account over); the checks are throttled per user. Signs out every other session of
 * the user (the current one stays) and revokes the user's personal access tokens.
 */
export async function changePassword(
  ctx: Ctx,
  userId: string,
  currentSessionId: string | null,
  current: string,
  next: string,
  code?: string | null,
) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (user.totpEnabledAt && !code)
    throw badInput("two-step verification is on: enter a code from your app or a recovery code", "code");
  const key = stepUpKey(userId);
  const refused = stepUpRefused(ctx, user, "user.password_change");
  try {
    await takeAttempt(ctx.prisma, key, STEP_UP_POLICY);
  } catch (err) {
    throw err instanceof AppError ? await refused("throttled", err) : err;
  }
  if (!user.passwordHash || !(await verifyPassword(current, user.passwordHash))) {
    throw await refused("wrong_password", badInput("the current password is wrong", "currentPassword"));
  }
  if (user.totpEnabledAt && !(await checkSecondFactor(ctx.prisma, ctx.masterKey, userId, code!)))
    throw await refused("wrong_code", badInput("the code is not valid", "code"));
  await succeeded(ctx.prisma, key);
  const problem = passwordProblem(next);
  if (problem) throw badInput(problem, "newPassword");
  if (current === next) throw badInput("the new password must differ from the current one", "newPassword");
  const passwordHash = await hashPassword(next);
  await ctx.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: userId }, data: { passwordHash } });
    await revokeOtherSessions(tx, userId, currentSessionId);
    // tokens made with the old password end with it
    const tokens = await tx.personalAccessToken.updateMany({
      where: { userId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    await audit(tx, ctx.actor, {
      action: "user.password_change",
      subjectType: "user",
      subjectId: userId,
      accountId: user.accountId,
      after: { otherSessionsSignedOut: true, accessTokensRevoked: tokens.count },
    });
  });
  await ctx.mail.send(passwordChangedMail(user.email)).catch(() => undefined);
}

// ---- e-mail binding ----

export const EMAIL_CODE_MINUTES = 15;
export const EMAIL_CODE_ATTEMPTS = 5;
const EMAIL_SENDS_PER_HOUR = 5;

/** Mails a six-digit code to the address; binding happens when the code comes back (verifyEmail). */
export async function requestEmailVerification(ctx: Ctx, userId: string, address?: string | null) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  const target = address ? checkEmail(address) : user.email;
  if (target !== user.email && (await ctx.prisma.user.findUnique({ where: { email: target } }))) {
    throw new AppError("CONFLICT", "this e-mail address belongs to another user");
  }
  if (target === user.email && user.emailVerifiedAt) throw badInput("this address is already verified", "email");
  const recent = await ctx.prisma.emailVerification.count({
    where: { userId, createdAt: { gt: new Date(Date.now() - 3600_000) } },
  });
  if (recent >= EMAIL_SENDS_PER_HOUR)
    throw new AppError("TOO_MANY_REQUESTS", "too many codes requested; try again later");
  const code = sixDigitCode();
  // a new code supersedes the old ones
  await ctx.prisma.emailVerification.updateMany({
    where: { userId, consumedAt: null },
    data: { consumedAt: new Date() },
  });
  const row = await ctx.prisma.emailVerification.create({
    data: {
      userId,
      email: target,
      codeHash: "",
      expiresAt: new Date(Date.now() + EMAIL_CODE_MINUTES * 60_000),
    },
  });
  await ctx.prisma.emailVerification.update({
    where: { id: row.id },
    data: { codeHash: hmacCode(ctx.masterKey, `email:${row.id}`, code) },
  });
  await ctx.mail.send(verificationMail(target, code, EMAIL_CODE_MINUTES));
  return { email: target, expiresAt: row.expiresAt };
}

export async function verifyEmail(ctx: Ctx, userId: string, code: string) {
  const row = await ctx.prisma.emailVerification.findFirst({
    where: { userId, consumedAt: null },
    orderBy: { createdAt: "desc" },
  });
  if (!row || row.expiresAt.getTime() <= Date.now()) throw badInput("no code is pending; request a new one", "code");
  if (row.attempts >= EMAIL_CODE_ATTEMPTS) throw badInput("too many wrong codes; request a new one", "code");
  const ok = safeEqualHex(row.codeHash, hmacCode(ctx.masterKey, `email:${row.id}`, code.trim()));
  if (!ok) {
    const after = await ctx.prisma.emailVerification.update({
      where: { id: row.id },
      data: { attempts: { increment: 1 } },
    });
    const left = Math.max(0, EMAIL_CODE_ATTEMPTS - after.attempts);
    throw new AppError("BAD_USER_INPUT", `the code is wrong (${left} attempts left)`, {
      field: "code",
      attemptsLeft: left,
    });
  }
  return ctx.prisma.$transaction(async (tx) => {
    await tx.emailVerification.update({ where: { id: row.id }, data: { consumedAt: new Date() } });
    const taken = await tx.user.findUnique({ where: { email: row.email } });
    if (taken && taken.id !== userId) throw new AppError("CONFLICT", "this e-mail address belongs to another user");
    const before = await tx.user.findUniqueOrThrow({ where: { id: userId } });
    const after = await tx.user.update({
      where: { id: userId },
      data: { email: normaliseEmail(row.email), emailVerifiedAt: new Date() },
      include: { account: true },
    });
    await audit(tx, ctx.actor, {
      action: "user.email_verify",
      subjectType: "user",
      subjectId: userId,
      accountId: after.accountId,
      before: { email: before.email, emailVerifiedAt: before.emailVerifiedAt },
      after: { email: after.email, emailVerifiedAt: after.emailVerifiedAt },
    });
    return after;
  });
}

// ---- two-step verification (TOTP) ----

export const RECOVERY_CODE_COUNT = 10;

/** Starts enrolment: a fresh secret is stored sealed, not yet enabled until confirmTotp. */
export async function enrollTotp(ctx: Ctx, userId: string) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (user.totpEnabledAt) throw badInput("two-step verification is already on; disable it first");
  const secret = newTotpSecret();
  await ctx.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: userId }, data: { totpSecretEnc: seal(ctx.masterKey, secret) } });
    await audit(tx, ctx.actor, {
      action: "totp.enroll",
      subjectType: "user",
      subjectId: userId,
      accountId: user.accountId,
      after: { twoStepEnabled: false },
    });
  });
  return { secret, uri: totpUri(secret, user.email) };
}

type Tx = Parameters<Parameters<Ctx["prisma"]["$transaction"]>[0]>[0];

async function issueRecoveryCodes(ctx: Ctx, tx: Tx, userId: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, recoveryCode);
  await tx.recoveryCode.deleteMany({ where: { userId } });
  await tx.recoveryCode.createMany({
    data: codes.map((c) => ({ userId, codeHash: hmacCode(ctx.masterKey, "recovery", c) })),
  });
  return codes;
}

/** Proves the authenticator works, switches TOTP on and returns the recovery codes (shown once). */
export async function confirmTotp(ctx: Ctx, userId: string, code: string) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (user.totpEnabledAt) throw badInput("two-step verification is already on");
  if (!user.totpSecretEnc) throw badInput("start enrolment first");
  const step = totpStep(open(ctx.masterKey, user.totpSecretEnc), code);
  if (step === null) throw badInput("the code is not valid", "code");
  // the confirming code is used: it cannot also complete a sign-in
  return ctx.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: userId }, data: { totpEnabledAt: new Date(), totpLastStep: BigInt(step) } });
    const codes = await issueRecoveryCodes(ctx, tx, userId);
    await audit(tx, ctx.actor, {
      action: "totp.enable",
      subjectType: "user",
      subjectId: userId,
      accountId: user.accountId,
      before: { twoStepEnabled: false },
      after: { twoStepEnabled: true, recoveryCodesIssued: codes.length },
    });
    return codes;
  });
}

/**
 * A refused step-up check (the code or current password that guards a change), for the audit log: who, from
 * where (the request's actor), for which change and why; never what was typed. Returns the error to throw.
 */
function stepUpRefused(ctx: Ctx, user: { id: string; accountId: string | null }, purpose: string) {
  return async <E>(reason: "wrong_code" | "wrong_password" | "throttled", err: E): Promise<E> => {
    await audit(ctx.prisma, ctx.actor, {
      action: "auth.step_up_failed",
      subjectType: "user",
      subjectId: user.id,
      accountId: user.accountId,
      after: { purpose, reason },
    });
    return err;
  };
}

/** A second-factor check that guards a change, throttled per user: a stolen session is no code oracle. */
async function stepUp(
  ctx: Ctx,
  user: { id: string; accountId: string | null },
  code: string,
  purpose: string,
): Promise<void> {
  const refused = stepUpRefused(ctx, user, purpose);
  let ok: boolean;
  try {
    ok = await throttled(ctx.prisma, stepUpKey(user.id), STEP_UP_POLICY, () =>
      checkSecondFactor(ctx.prisma, ctx.masterKey, user.id, code),
    );
  } catch (err) {
    throw err instanceof AppError ? await refused("throttled", err) : err;
  }
  if (!ok) throw await refused("wrong_code", badInput("the code is not valid", "code"));
}

/** Needs a current TOTP or recovery code. */
export async function disableTotp(ctx: Ctx, userId: string, code: string) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (!user.totpEnabledAt) throw badInput("two-step verification is not on");
  await stepUp(ctx, user, code, "totp.disable");
  await ctx.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: userId }, data: { totpEnabledAt: null, totpSecretEnc: null } });
    await tx.recoveryCode.deleteMany({ where: { userId } });
    await audit(tx, ctx.actor, {
      action: "totp.disable",
      subjectType: "user",
      subjectId: userId,
      accountId: user.accountId,
      before: { twoStepEnabled: true },
      after: { twoStepEnabled: false },
    });
  });
}

export async function regenerateRecoveryCodes(ctx: Ctx, userId: string, code: string) {
  const user = await ctx.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (!user.totpEnabledAt) throw badInput("two-step verification is not on");
  await stepUp(ctx, user, code, "totp.recovery_codes");
  return ctx.prisma.$transaction(async (tx) => {
    const codes = await issueRecoveryCodes(ctx, tx, userId);
    await audit(tx, ctx.actor, {
      action: "totp.recovery_codes",
      subjectType: "user",
      subjectId: userId,
      accountId: user.accountId,
      after: { recoveryCodesIssued: codes.length },
    });
    return codes;
  });
}

export const remainingRecoveryCodes = (ctx: ServiceContext, userId: string) =>
  ctx.prisma.recoveryCode.count({ where: { userId, usedAt: null } });

// ---- personal access tokens ----

export async function createPersonalAccessToken(
  ctx: ServiceContext,
  user: { id: string; role: string; accountId?: string | null },
  input: { name: string; scopes: string[]; expiresAt?: Date | null },
) {
  const name = input.name.trim();
  if (!name || name.length > 100) throw badInput("a name of 1 to 100 characters is needed", "name");
  const scopes = [...new Set(input.scopes)];
  if (scopes.length === 0) throw badInput("at least one scope is needed", "scopes");
  for (const s of scopes) {
    if (!(TOKEN_SCOPES as readonly string[]).includes(s)) throw badInput(`unknown scope ${s}`, "scopes");
  }
  if (scopes.includes("operator") && user.role !== "operator")
    throw badInput("only operators may hold the operator scope", "scopes");
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
    throw badInput("the expiry is in the past", "expiresAt");
  const token = randomToken(PAT_PREFIX);
  const row = await ctx.prisma.$transaction(async (tx) => {
    const created = await tx.personalAccessToken.create({
      data: {
        userId: user.id,
        name,
        tokenHash: sha256(token),
        prefix: `${token.slice(0, PAT_PREFIX.length + 4)}…${token.slice(-4)}`,
        scopes: scopes as TokenScope[],
        expiresAt: input.expiresAt ?? null,
      },
    });
    const { name: tokenName, prefix, scopes: granted, expiresAt } = created;
    await audit(tx, ctx.actor, {
      action: "access_token.create",
      subjectType: "access_token",
      subjectId: created.id,
      accountId: user.accountId ?? null,
      after: { name: tokenName, prefix, tokenScopes: granted, expiresAt },
    });
    return created;
  });
  return { token, row };
}

export async function revokePersonalAccessToken(ctx: ServiceContext, userId: string, id: string) {
  return ctx.prisma.$transaction(async (tx) => {
    const done = await tx.personalAccessToken.updateMany({
      where: { id, userId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (done.count !== 1) throw notFound("access token");
    const after = await tx.personalAccessToken.findUniqueOrThrow({
      where: { id },
      include: { user: { select: { accountId: true } } },
    });
    const { user, ...row } = after;
    await audit(tx, ctx.actor, {
      action: "access_token.revoke",
      subjectType: "access_token",
      subjectId: id,
      accountId: user.accountId,
      after: { name: row.name, prefix: row.prefix, revokedAt: row.revokedAt },
    });
    return row;
  });
}
