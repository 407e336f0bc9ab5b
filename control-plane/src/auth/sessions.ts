import type { Db } from "../db/client.ts";
import { randomToken, sha256, SESSION_PREFIX } from "./tokens.ts";

export const SESSION_TTL_MS = 30 * 24 * 3600_000;
/** A session that passed the password but not yet the second step lives only this long. */
export const PENDING_TTL_MS = 10 * 60_000;
const TOUCH_EVERY_MS = 5 * 60_000;

export async function createSession(prisma: Db, userId: string, pendingSecondStep: boolean) {
  const token = randomToken(SESSION_PREFIX);
  const session = await prisma.session.create({
    data: {
      userId,
      tokenHash: sha256(token),
      pendingSecondStep,
      expiresAt: new Date(Date.now() + (pendingSecondStep ? PENDING_TTL_MS : SESSION_TTL_MS)),
    },
  });
  return { token, session };
}

/** The live session behind a cookie value with its user, or null (unknown, revoked or expired). */
export async function findSession(prisma: Db, token: string) {
  if (!token.startsWith(SESSION_PREFIX)) return null;
  const session = await prisma.session.findUnique({
    where: { tokenHash: sha256(token) },
    include: { user: { include: { account: true } } },
  });
  const now = Date.now();
  if (!session || session.revokedAt || session.expiresAt.getTime() <= now) return null;
  if (now - session.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
    await prisma.session.update({ where: { id: session.id }, data: { lastSeenAt: new Date(now) } });
  }
  return session;
}

export const revokeSession = (prisma: Db, id: string) =>
  prisma.session.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });

export const revokeOtherSessions = (prisma: Pick<Db, "session">, userId: string, exceptId: string | null) =>
  prisma.session.updateMany({
    where: { userId, revokedAt: null, ...(exceptId ? { id: { not: exceptId } } : {}) },
    data: { revokedAt: new Date() },
  });
