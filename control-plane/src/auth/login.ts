import type { Db } from "../db/client.ts";
import { open } from "@modelgate/data-plane/crypto/secret-box";
import { AppError } from "../services/errors.ts";
import { dummyHash, verifyPassword } from "./password.ts";
import { createSession, revokeSession } from "./sessions.ts";
import { hmacCode, normaliseRecoveryCode, safeEqualHex } from "./tokens.ts";
import { verifyTotp } from "./totp.ts";

export const MAX_FAILURES = 5;
export const LOCK_MS = 15 * 60_000;

export const normaliseEmail = (email: string) => email.trim().toLowerCase();

const locked = (until: Date) =>
  new AppError("TOO_MANY_REQUESTS", `too many failed attempts; try again after ${until.toISOString()}`, {
    lockedUntil: until.toISOString(),
  });

/** Counts a failure; the fifth in a row locks the user out for LOCK_MS. */
async function recordFailure(prisma: Db, userId: string) {
  const user = await prisma.user.update({ where: { id: userId }, data: { failedLogins: { increment: 1 } } });
  if (user.failedLogins >= MAX_FAILURES) {
    const until = new Date(Date.now() + LOCK_MS);
    await prisma.user.update({ where: { id: userId }, data: { failedLogins: 0, lockedUntil: until } });
    return until;
  }
  return null;
}

export type LoginResult =
  | { secondStepRequired: false; token: string; userId: string }
  | { secondStepRequired: true; token: string; userId: string };

export async function login(prisma: Db, email: string, password: string): Promise<LoginResult> {
  const user = await prisma.user.findUnique({ where: { email: normaliseEmail(email) }, include: { account: true } });
  const wrong = new AppError("UNAUTHENTICATED", "wrong e-mail or password");
  if (!user || !user.passwordHash) {
    await verifyPassword(password, await dummyHash()); // same cost as a real check: no user-exists oracle by timing
    throw wrong;
  }
  if (user.lockedUntil && user.lockedUntil.getTime() > Date.now()) throw locked(user.lockedUntil);
  if (!(await verifyPassword(password, user.passwordHash))) {
    const until = await recordFailure(prisma, user.id);
    if (until) throw locked(until);
    throw wrong;
  }
  if (user.role !== "operator" && user.account?.status === "disabled") {
    throw new AppError("FORBIDDEN", "this account is disabled; contact your business contact");
  }
  await prisma.user.update({ where: { id: user.id }, data: { failedLogins: 0, lockedUntil: null } });
  const pending = user.totpEnabledAt !== null;
  const { token } = await createSession(prisma, user.id, pending);
  return { secondStepRequired: pending, token, userId: user.id };
}

/** A TOTP code, or one unused recovery code (consumed on success). */
export async function checkSecondFactor(prisma: Db, masterKey: Buffer, userId: string, code: string): Promise<boolean> {
  const user = await prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (!user.totpSecretEnc) return false;
  if (/^\s*\d{6}\s*$/.test(code)) return verifyTotp(open(masterKey, user.totpSecretEnc), code);
  const hash = hmacCode(masterKey, "recovery", normaliseRecoveryCode(code));
  const candidates = await prisma.recoveryCode.findMany({ where: { userId, usedAt: null } });
  const hit = candidates.find((c) => safeEqualHex(c.codeHash, hash));
  if (!hit) return false;
  const used = await prisma.recoveryCode.updateMany({ where: { id: hit.id, usedAt: null }, data: { usedAt: new Date() } });
  return used.count === 1;
}

/** Completes a pending login; the pending session is replaced by a fresh one (no session fixation). */
export async function verifySecondStep(
  prisma: Db,
  masterKey: Buffer,
  pending: { sessionId: string; userId: string },
  code: string,
): Promise<{ token: string }> {
  const user = await prisma.user.findUniqueOrThrow({ where: { id: pending.userId } });
  if (user.lockedUntil && user.lockedUntil.getTime() > Date.now()) {
    await revokeSession(prisma, pending.sessionId);
    throw locked(user.lockedUntil);
  }
  if (!(await checkSecondFactor(prisma, masterKey, user.id, code))) {
    const until = await recordFailure(prisma, user.id);
    if (until) {
      await revokeSession(prisma, pending.sessionId);
      throw locked(until);
    }
    throw new AppError("BAD_USER_INPUT", "the code is not valid", { field: "code" });
  }
  await prisma.user.update({ where: { id: user.id }, data: { failedLogins: 0, lockedUntil: null } });
  await revokeSession(prisma, pending.sessionId);
  const { token } = await createSession(prisma, user.id, false);
  return { token };
}
