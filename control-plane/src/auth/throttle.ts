import type { Db } from "../db/client.ts";
import { AppError } from "../errors/app-error.ts";

// Throttling of guesses: sign-in by (e-mail, client address), the second step and step-up checks by user.
// Each attempt is taken from the budget *before* the secret is checked, in one transaction that locks the
// key's row, so parallel requests cannot all slip through: with a budget of 5, 60 parallel guesses check at
// most 5 secrets. After the free attempts, each failure doubles the wait before the next attempt (30 s, 1 min,
// 2 min … up to 15 minutes). A success clears the key. Keys include the client address for sign-in, so nobody can
// lock another person out from elsewhere, and an unknown e-mail is throttled exactly like a known one.

export interface ThrottlePolicy {
  /** attempts before waiting starts */
  free: number;
  /** failures older than this are forgotten */
  windowMs: number;
  maxWaitMs: number;
}

export const LOGIN_POLICY: ThrottlePolicy = { free: 5, windowMs: 3600_000, maxWaitMs: 15 * 60_000 };
/**
 * Every sign-in attempt from one client address, whatever e-mail it names (checked before the (e-mail, address)
 * key and before any hash), so fresh e-mails buy no fresh attempts: ten free, then the same doubling wait. A
 * success gives its attempt back (refund) rather than clearing the key, so one known password does not reset
 * an address's budget for guesses at others.
 */
export const ADDRESS_POLICY: ThrottlePolicy = { free: 10, windowMs: 15 * 60_000, maxWaitMs: 15 * 60_000 };
export const STEP_UP_POLICY: ThrottlePolicy = { free: 5, windowMs: 3600_000, maxWaitMs: 15 * 60_000 };

/** The wait after `failures` failures (none within the free attempts). */
export function waitAfter(failures: number, policy: ThrottlePolicy): number {
  if (failures < policy.free) return 0;
  return Math.min(30_000 * 2 ** Math.min(failures - policy.free, 30), policy.maxWaitMs);
}

export const tooMany = (until: Date) =>
  new AppError("TOO_MANY_REQUESTS", `too many failed attempts; try again after ${until.toISOString()}`, {
    retryAt: until.toISOString(),
  });

/**
 * Takes one attempt for `key`, or throws TOO_MANY_REQUESTS while the key must wait. The attempt counts as a
 * failure until `succeeded(key)` clears it.
 */
export async function takeAttempt(prisma: Db, key: string, policy: ThrottlePolicy, now = new Date()): Promise<void> {
  const refused = await prisma.$transaction(async (tx) => {
    await tx.$executeRaw`INSERT INTO auth_throttles (key, failures, updated_at) VALUES (${key}, 0, ${now}) ON CONFLICT (key) DO NOTHING`;
    const [row] = await tx.$queryRaw<{ failures: number; blocked_until: Date | null; updated_at: Date }[]>`
      SELECT failures, blocked_until, updated_at FROM auth_throttles WHERE key = ${key} FOR UPDATE`;
    const stale = now.getTime() - row!.updated_at.getTime() > policy.windowMs;
    const failures = stale ? 0 : row!.failures;
    if (!stale && row!.blocked_until && row!.blocked_until.getTime() > now.getTime()) return row!.blocked_until;
    const next = failures + 1;
    const wait = waitAfter(next, policy);
    await tx.$executeRaw`UPDATE auth_throttles SET failures = ${next}, blocked_until = ${wait ? new Date(now.getTime() + wait) : null}, updated_at = ${now} WHERE key = ${key}`;
    return null;
  });
  if (refused) throw tooMany(refused);
}

/** The secret was right: the key starts afresh. */
export async function succeeded(prisma: Db, key: string): Promise<void> {
  await prisma.$executeRaw`DELETE FROM auth_throttles WHERE key = ${key}`;
}

/** The attempt did not count (a success, or refused before its secret was checked): one failure less. */
export async function refund(prisma: Db, key: string): Promise<void> {
  await prisma.$executeRaw`UPDATE auth_throttles SET failures = GREATEST(failures - 1, 0) WHERE key = ${key}`;
}

/** Runs `check` as one throttled attempt: cleared when it returns true, counted when it returns false. */
export async function throttled(
  prisma: Db,
  key: string,
  policy: ThrottlePolicy,
  check: () => Promise<boolean>,
): Promise<boolean> {
  await takeAttempt(prisma, key, policy);
  const ok = await check();
  if (ok) await succeeded(prisma, key);
  return ok;
}

/** Old rows go: a key untouched for a window holds nothing worth keeping. */
export async function forgetStale(prisma: Db, policy: ThrottlePolicy = LOGIN_POLICY): Promise<number> {
  return prisma.$executeRaw`DELETE FROM auth_throttles WHERE updated_at < ${new Date(Date.now() - policy.windowMs - policy.maxWaitMs)}`;
}

export const loginKey = (email: string, clientIp: string | null) => `login:${email}:${clientIp ?? "unknown"}`;
export const loginAddressKey = (clientIp: string | null) => `login-address:${clientIp ?? "unknown"}`;
export const secondStepKey = (userId: string) => `second-step:${userId}`;
export const stepUpKey = (userId: string) => `step-up:${userId}`;
