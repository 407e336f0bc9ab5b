import { audit } from "../audit/record.ts";
import type { Db } from "../db/client.ts";
import { open } from "@modelgate/data-plane";
import { AppError } from "../errors/app-error.ts";
import { dummyHash, HashQueueFull, hashPassword, LOGIN_HASH_QUEUE, needsRehash, verifyPassword } from "./password.ts";
import { createSession, revokeSession } from "./sessions.ts";
import { hmacCode, normaliseRecoveryCode, safeEqualHex } from "./tokens.ts";
import {
  ADDRESS_POLICY,
  LOGIN_POLICY,
  loginAddressKey,
  loginKey,
  refund,
  secondStepKey,
  succeeded,
  takeAttempt,
} from "./throttle.ts";
import { totpStep } from "./totp.ts";

export const normaliseEmail = (email: string) => email.trim().toLowerCase();

/** RFC 5321's limit on an address (a path of 256 minus its angle brackets). */
export const MAX_EMAIL_LENGTH = 254;

export type LoginResult =
  | { secondStepRequired: false; token: string; userId: string }
  | { secondStepRequired: true; token: string; userId: string };

/**
 * Password sign-in, throttled by client address and by (e-mail, client address) before the password is checked.
 * An unknown e-mail costs and answers exactly what a known one does: the same hash work, the same throttle, the
 * same message. An e-mail longer than any address is refused before anything else, so it is never stored.
 */
export async function login(
  prisma: Db,
  email: string,
  password: string,
  clientIp: string | null = null,
): Promise<LoginResult> {
  if (email.length > MAX_EMAIL_LENGTH)
    throw new AppError("BAD_USER_INPUT", `an e-mail address has at most ${MAX_EMAIL_LENGTH} characters`, {
      field: "email",
    });
  const address = normaliseEmail(email);
  const key = loginKey(address, clientIp);
  const addressKey = loginAddressKey(clientIp);
  // Every failure is audited with the address tried (never the password); the known user's account sees it too.
  const failed = async (reason: string, user: { id: string; accountId: string | null } | null, err: AppError) => {
    await audit(
      prisma,
      { type: "anonymous", address: clientIp },
      {
        action: "auth.login_failed",
        subjectType: "user",
        subjectId: user?.id ?? null,
        accountId: user?.accountId ?? null,
        after: { email: address, reason },
      },
    );
    return err;
  };
  try {
    // the address's budget first: a fresh e-mail per attempt buys nothing
    await takeAttempt(prisma, addressKey, ADDRESS_POLICY);
    try {
      await takeAttempt(prisma, key, LOGIN_POLICY);
    } catch (err) {
      await refund(prisma, addressKey);
      throw err;
    }
  } catch (err) {
    throw err instanceof AppError ? await failed("throttled", null, err) : err;
  }
  const user = await prisma.user.findUnique({ where: { email: address }, include: { account: true } });
  let ok: boolean;
  try {
    // same cost either way; refused at once while too many checks wait for a hash slot
    ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash()), LOGIN_HASH_QUEUE);
  } catch (err) {
    if (!(err instanceof HashQueueFull)) throw err;
    // nothing was checked: the attempt counts against neither budget
    await refund(prisma, key);
    await refund(prisma, addressKey);
    throw await failed(
      "busy",
      null,
      new AppError("TOO_MANY_REQUESTS", "too many sign-ins at once; try again in a few seconds", {
        retryAt: new Date(Date.now() + 5_000).toISOString(),
      }),
    );
  }
  if (!user || !user.passwordHash || !ok) {
    throw await failed(
      user ? "wrong_password" : "unknown_email",
      user,
      new AppError("UNAUTHENTICATED", "wrong e-mail or password"),
    );
  }
  await succeeded(prisma, key);
  await refund(prisma, addressKey);
  if (user.role !== "operator" && user.account?.status === "disabled") {
    throw await failed(
      "account_disabled",
      user,
      new AppError("FORBIDDEN", "this account is disabled; contact your business contact"),
    );
  }
  // a hash made at an older cost is made again now that the password is at hand
  if (needsRehash(user.passwordHash))
    await prisma.user.update({ where: { id: user.id }, data: { passwordHash: await hashPassword(password) } });
  const pending = user.totpEnabledAt !== null;
  const { token } = await createSession(prisma, user.id, pending);
  await audit(
    prisma,
    { type: "user", userId: user.id, email: user.email, address: clientIp },
    {
      action: pending ? "auth.login_password" : "auth.login",
      subjectType: "user",
      subjectId: user.id,
      accountId: user.accountId,
      after: { method: "password", secondStepRequired: pending },
    },
  );
  return { secondStepRequired: pending, token, userId: user.id };
}

/** A TOTP code, or one unused recovery code (consumed on success). */
export async function checkSecondFactor(prisma: Db, masterKey: Buffer, userId: string, code: string): Promise<boolean> {
  const user = await prisma.user.findUniqueOrThrow({ where: { id: userId } });
  if (!user.totpSecretEnc) return false;
  if (/^\s*\d{6}\s*$/.test(code)) {
    const step = totpStep(open(masterKey, user.totpSecretEnc), code);
    if (step === null) return false;
    // A code is good once: the step is recorded only if it is later than the last one used, atomically.
    const used = await prisma.user.updateMany({
      where: { id: userId, OR: [{ totpLastStep: null }, { totpLastStep: { lt: BigInt(step) } }] },
      data: { totpLastStep: BigInt(step) },
    });
    return used.count === 1;
  }
  const hash = hmacCode(masterKey, "recovery", normaliseRecoveryCode(code));
  const candidates = await prisma.recoveryCode.findMany({ where: { userId, usedAt: null } });
  const hit = candidates.find((c) => safeEqualHex(c.codeHash, hash));
  if (!hit) return false;
  const used = await prisma.recoveryCode.updateMany({
    where: { id: hit.id, usedAt: null },
    data: { usedAt: new Date() },
  });
  return used.count === 1;
}

/** Completes a pending login; the pending session is replaced by a fresh one (no session fixation). */
export async function verifySecondStep(
  prisma: Db,
  masterKey: Buffer,
  pending: { sessionId: string; userId: string },
  code: string,
  clientIp: string | null = null,
): Promise<{ token: string }> {
  const key = secondStepKey(pending.userId);
  const user = await prisma.user.findUniqueOrThrow({ where: { id: pending.userId } });
  const actor = { type: "user" as const, userId: user.id, email: user.email, address: clientIp };
  const failed = (reason: string) =>
    audit(prisma, actor, {
      action: "auth.login_failed",
      subjectType: "user",
      subjectId: user.id,
      accountId: user.accountId,
      after: { email: user.email, reason },
    });
  try {
    await takeAttempt(prisma, key, LOGIN_POLICY);
  } catch (err) {
    await revokeSession(prisma, pending.sessionId); // the pending sign-in ends: start again with the password
    await failed("second_step_throttled");
    throw err;
  }
  if (!(await checkSecondFactor(prisma, masterKey, user.id, code))) {
    await failed("wrong_second_step_code");
    throw new AppError("BAD_USER_INPUT", "the code is not valid", { field: "code" });
  }
  await succeeded(prisma, key);
  await revokeSession(prisma, pending.sessionId);
  const { token } = await createSession(prisma, user.id, false);
  await audit(prisma, actor, {
    action: "auth.login",
    subjectType: "user",
    subjectId: user.id,
    accountId: user.accountId,
    after: { method: "password+totp" },
  });
  return { token };
}
