import type { Db } from "../db/client.ts";
import type { Account, User } from "../generated/prisma/client.ts";
import { AppError } from "../errors/app-error.ts";
import { parseCookies, SESSION_COOKIE } from "./cookies.ts";
import { findSession } from "./sessions.ts";
import { PAT_PREFIX, sha256 } from "./tokens.ts";

/** Scopes a personal access token may carry. A browser session holds all of them implicitly. */
export const TOKEN_SCOPES = ["read", "write", "operator"] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

export type UserWithAccount = User & { account: Account | null };

export interface Principal {
  user: UserWithAccount;
  via: "session" | "token";
  sessionId: string | null;
  tokenId: string | null;
  /** null for sessions (everything the role allows) */
  tokenScopes: TokenScope[] | null;
}

export interface RequestAuth {
  principal: Principal | null;
  /** the password step passed, the TOTP step not yet */
  pending: { sessionId: string; user: UserWithAccount } | null;
  /** a credential was presented but is not valid: the request fails rather than running anonymously */
  error: AppError | null;
  /** the session cookie was stale: the response clears it */
  clearCookie: boolean;
}

const anonymous = (error: AppError | null = null, clearCookie = false): RequestAuth => ({
  principal: null,
  pending: null,
  error,
  clearCookie,
});

const usable = (user: UserWithAccount) => user.role === "operator" || user.account?.status !== "disabled";

/** Reads `Authorization: Bearer mgp_…` or the `mg_session` cookie; the header wins when both are present. */
export async function authenticate(
  prisma: Db,
  headers: { authorization?: string | null; cookie?: string | null },
): Promise<RequestAuth> {
  const authz = headers.authorization;
  if (authz) {
    const m = /^Bearer ([^\s]+)$/.exec(authz);
    if (!m) return anonymous(new AppError("UNAUTHENTICATED", "the Authorization header must be 'Bearer <token>'"));
    const token = m[1]!;
    if (!token.startsWith(PAT_PREFIX)) {
      return anonymous(
        new AppError(
          "UNAUTHENTICATED",
          "use a personal access token (mgp_…); API keys (sk-…) are for the model API only",
        ),
      );
    }
    const pat = await prisma.personalAccessToken.findUnique({
      where: { tokenHash: sha256(token) },
      include: { user: { include: { account: true } } },
    });
    if (!pat || pat.revokedAt || (pat.expiresAt && pat.expiresAt.getTime() <= Date.now()) || !usable(pat.user)) {
      return anonymous(new AppError("UNAUTHENTICATED", "the access token is invalid, expired or revoked"));
    }
    if (!pat.lastUsedAt || Date.now() - pat.lastUsedAt.getTime() > 60_000) {
      await prisma.personalAccessToken.update({ where: { id: pat.id }, data: { lastUsedAt: new Date() } });
    }
    return {
      principal: {
        user: pat.user,
        via: "token",
        sessionId: null,
        tokenId: pat.id,
        tokenScopes: pat.scopes.filter((s): s is TokenScope => (TOKEN_SCOPES as readonly string[]).includes(s)),
      },
      pending: null,
      error: null,
      clearCookie: false,
    };
  }
  const cookie = parseCookies(headers.cookie).get(SESSION_COOKIE);
  if (!cookie) return anonymous();
  const session = await findSession(prisma, cookie);
  if (!session || !usable(session.user)) return anonymous(null, true);
  if (session.pendingSecondStep) {
    return { principal: null, pending: { sessionId: session.id, user: session.user }, error: null, clearCookie: false };
  }
  return {
    principal: { user: session.user, via: "session", sessionId: session.id, tokenId: null, tokenScopes: null },
    pending: null,
    error: null,
    clearCookie: false,
  };
}
