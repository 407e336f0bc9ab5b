import * as oidc from "openid-client";
import { z } from "zod";
import { open, seal } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import { audit, type AuditDb } from "../audit/record.ts";
import { MAX_EMAIL_LENGTH } from "./login.ts";
import { createSession } from "./sessions.ts";

// Console sign-in through OpenID Connect: the authorization code flow with PKCE (S256), a state and a nonce,
// all three kept in a short-lived cookie sealed with the master key (so no server-side store, and it works
// on any control plane). The ID token's claims are mapped to a role by the operator's rules; the local
// password sign-in stays.

/** One mapping rule: when `claim` equals `value` (or, for a list claim such as groups, contains it). */
const ruleSchema = z
  .object({
    claim: z.string().min(1),
    value: z.union([z.string(), z.boolean(), z.number()]).transform(String),
    role: z.enum(["operator", "owner", "member"]),
    /** the account (name or id) for owner and member */
    account: z.string().min(1).optional(),
  })
  .strict()
  .refine((r) => r.role === "operator" || r.account !== undefined, {
    message: "an owner or member rule names its account",
  });
export type OidcRule = z.infer<typeof ruleSchema>;

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  redirectUrl: URL;
  scope: string;
  rules: OidcRule[];
  /** shown on the sign-in button */
  label: string;
}

/**
 * MODELGATE_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET, _REDIRECT_URL (default MODELGATE_PUBLIC_URL +
 * /auth/oidc/callback), _SCOPES (default "openid email profile"), _ROLES (a JSON list of rules), _LABEL.
 * Null when no issuer is set; throws when the settings are incomplete, so a half-configured SSO stops the start.
 */
export function readOidcSettings(env: NodeJS.ProcessEnv): OidcSettings | null {
  if (!env.MODELGATE_OIDC_ISSUER) return null;
  const need = (name: string) => {
    const v = env[name];
    if (!v) throw new Error(`${name} is required when MODELGATE_OIDC_ISSUER is set`);
    return v;
  };
  const redirect =
    env.MODELGATE_OIDC_REDIRECT_URL ??
    (env.MODELGATE_PUBLIC_URL ? `${env.MODELGATE_PUBLIC_URL.replace(/\/+$/, "")}/auth/oidc/callback` : undefined);
  if (!redirect)
    throw new Error(
      "MODELGATE_OIDC_REDIRECT_URL (or MODELGATE_PUBLIC_URL) is required when MODELGATE_OIDC_ISSUER is set",
    );
  let rules: unknown;
  try {
    rules = JSON.parse(need("MODELGATE_OIDC_ROLES"));
  } catch (err) {
    throw new Error(`MODELGATE_OIDC_ROLES is not JSON: ${(err as Error).message}`);
  }
  const parsed = z.array(ruleSchema).min(1).safeParse(rules);
  if (!parsed.success)
    throw new Error(
      `MODELGATE_OIDC_ROLES: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return {
    issuer: new URL(env.MODELGATE_OIDC_ISSUER),
    clientId: need("MODELGATE_OIDC_CLIENT_ID"),
    clientSecret: need("MODELGATE_OIDC_CLIENT_SECRET"),
    redirectUrl: new URL(redirect),
    scope: env.MODELGATE_OIDC_SCOPES ?? "openid email profile",
    rules: parsed.data,
    label: env.MODELGATE_OIDC_LABEL ?? "single sign-on",
  };
}

/** The first rule that matches the claims, or null. */
export function matchRule(rules: OidcRule[], claims: Record<string, unknown>): OidcRule | null {
  for (const rule of rules) {
    const v = claims[rule.claim];
    const values = Array.isArray(v) ? v : [v];
    if (values.some((x) => x !== undefined && x !== null && String(x) === rule.value)) return rule;
  }
  return null;
}

/** The sign-in flow's state, sealed into a cookie between the redirect out and the callback. */
const flowSchema = z.object({
  state: z.string(),
  nonce: z.string(),
  verifier: z.string(),
  returnTo: z.string(),
  exp: z.number(),
});
type Flow = z.infer<typeof flowSchema>;
export const FLOW_COOKIE = "mg_oidc";
export const FLOW_TTL_MS = 10 * 60_000;

/**
 * Only a path of this origin: never an open redirect to another site, and only printable ASCII, so it can go in
 * a Location header as it is (a control character there made the answer fail after the session was created).
 */
export const safeReturnTo = (v: string | null | undefined): string =>
  v && /^\/(?![/\\])[\x21-\x7e]*$/.test(v) ? v : "/";

/**
 * Why a sign-in failed, as a fixed code: the sign-in page shows its own message for each, never text from the
 * identity provider or from the URL (see console/src/pages/LoginPage.vue).
 */
export type OidcErrorCode =
  | "expired"
  | "provider_denied"
  | "provider_unavailable"
  | "provider_error"
  | "answer_refused"
  | "no_id_token"
  | "no_email"
  | "email_unverified"
  | "unmapped"
  | "account_missing"
  | "account_disabled"
  | "linked_elsewhere"
  | "operator_not_linked"
  | "unavailable";

export class OidcError extends Error {
  constructor(
    readonly status: number,
    readonly code: OidcErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The provider's own `error` (OAuth 2.0 / OpenID Connect) as one of ours; its `error_description` is never shown. */
export function providerErrorCode(error: string): OidcErrorCode {
  if (["access_denied", "login_required", "consent_required", "interaction_required"].includes(error))
    return "provider_denied";
  if (error === "temporarily_unavailable" || error === "server_error") return "provider_unavailable";
  return "provider_error";
}

export class OidcSignIn {
  private config: Promise<oidc.Configuration> | null = null;

  constructor(
    readonly settings: OidcSettings,
    private readonly prisma: Db,
    private readonly masterKey: Buffer,
  ) {}

  /** Discovery, once; a failure is retried at the next sign-in rather than cached. */
  private discover(): Promise<oidc.Configuration> {
    if (!this.config) {
      const s = this.settings;
      // Plain http only for an issuer on this machine (a local provider in development and in tests).
      const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(s.issuer.hostname);
      const options = s.issuer.protocol === "http:" && loopback ? { execute: [oidc.allowInsecureRequests] } : undefined;
      this.config = oidc.discovery(s.issuer, s.clientId, s.clientSecret, undefined, options);
      this.config.catch(() => (this.config = null));
    }
    return this.config;
  }

  /** Where to send the browser, and the sealed cookie value that the callback needs. */
  async start(returnTo: string | null): Promise<{ location: string; cookie: string }> {
    const config = await this.discover();
    const verifier = oidc.randomPKCECodeVerifier();
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier,
      returnTo: safeReturnTo(returnTo),
      exp: Date.now() + FLOW_TTL_MS,
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUrl.href,
      scope: this.settings.scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: flow.state,
      nonce: flow.nonce,
    });
    return { location: url.href, cookie: seal(this.masterKey, JSON.stringify(flow)) };
  }

  /**
   * The callback: checks state, exchanges the code with the verifier, verifies the ID token (issuer, audience,
   * signature, nonce), maps its claims and signs the user in. Returns a session token and where to go.
   */
  async finish(
    callbackUrl: URL,
    sealedFlow: string | undefined,
    clientIp: string | null = null,
  ): Promise<{ token: string; returnTo: string; userId: string }> {
    let flow: Flow;
    try {
      flow = flowSchema.parse(JSON.parse(open(this.masterKey, sealedFlow ?? "")));
    } catch {
      throw new OidcError(400, "expired", "The sign-in took too long or was started in another browser: start again.");
    }
    if (flow.exp < Date.now()) throw new OidcError(400, "expired", "The sign-in took too long: start again.");
    const config = await this.discover();
    // The callback is checked against the registered redirect URL, whatever host the request came in on.
    const current = new URL(this.settings.redirectUrl.href);
    current.search = callbackUrl.search;
    let tokens;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw new OidcError(
        401,
        "answer_refused",
        `The identity provider's answer was refused: ${(err as Error).message}`,
      );
    }
    const claims = tokens.claims() as Record<string, unknown> | undefined;
    if (!claims) throw new OidcError(401, "no_id_token", "The identity provider sent no ID token.");
    let user;
    try {
      user = await this.signIn(claims, clientIp);
    } catch (err) {
      // never more of the provider's text than an address can hold
      const email =
        typeof claims.email === "string" ? claims.email.trim().toLowerCase().slice(0, MAX_EMAIL_LENGTH) : null;
      await audit(
        this.prisma,
        { type: "anonymous", address: clientIp },
        {
          action: "auth.login_failed",
          subjectType: "user",
          after: { method: "oidc", email, reason: err instanceof OidcError ? err.message : "error" },
        },
      );
      throw err;
    }
    // checked again before any session exists: a flow sealed by an older version may hold any path
    const returnTo = safeReturnTo(flow.returnTo);
    const { token } = await createSession(this.prisma, user.id, false);
    await audit(
      this.prisma,
      { type: "user", userId: user.id, email: user.email, address: clientIp },
      {
        action: "auth.login",
        subjectType: "user",
        subjectId: user.id,
        accountId: user.accountId,
        after: { method: "oidc", role: user.role },
      },
    );
    return { token, returnTo, userId: user.id };
  }

  /**
   * Finds the user behind the claims, links a local user to the identity, or creates one. Only a user that SSO
   * created follows the rules' role and account at each sign-in; a local user keeps the role and account it had
   * (an identity provider must never re-role or move it), and an operator is never linked by e-mail at all.
   */
  private async signIn(claims: Record<string, unknown>, clientIp: string | null) {
    const subject = `${String(claims.iss)}#${String(claims.sub)}`;
    const email = typeof claims.email === "string" ? claims.email.trim().toLowerCase() : "";
    const rule = matchRule(this.settings.rules, claims);
    if (!rule)
      throw new OidcError(
        403,
        "unmapped",
        "This identity has no role in modelgate: ask the operator to map it (MODELGATE_OIDC_ROLES).",
      );
    const name = typeof claims.name === "string" ? claims.name.slice(0, 200) : null;
    const linked = await this.prisma.user.findUnique({ where: { oidcSubject: subject } });
    if (linked && !linked.oidcManaged) return linked; // a linked local user: its role and account stay its own
    // Linking or creating goes by the e-mail, so the provider must vouch for it: only the boolean true counts
    // (a missing claim, "false" or "true" as text do not).
    if (!linked) {
      if (!email || email.length > MAX_EMAIL_LENGTH)
        throw new OidcError(403, "no_email", "The identity provider did not share an e-mail address (scope email).");
      if (claims.email_verified !== true)
        throw new OidcError(
          403,
          "email_unverified",
          "The identity provider does not say this e-mail address is verified.",
        );
    }
    const accountId = rule.role === "operator" ? null : await this.ruleAccount(rule);
    const mapped = { role: rule.role, accountId, ...(name ? { name } : {}) } as const;
    return this.prisma.$transaction(async (tx) => {
      if (linked) return tx.user.update({ where: { id: linked.id }, data: mapped });
      const byEmail = await tx.user.findUnique({ where: { email } });
      if (!byEmail) {
        const created = await tx.user.create({
          data: { ...mapped, email, emailVerifiedAt: new Date(), oidcSubject: subject, oidcManaged: true },
        });
        await auditLink(tx, created, subject, clientIp, { created: true, role: created.role });
        return created;
      }
      if (byEmail.oidcSubject)
        throw new OidcError(403, "linked_elsewhere", "This e-mail address is linked to another identity.");
      if (byEmail.role === "operator")
        throw new OidcError(
          403,
          "operator_not_linked",
          "This e-mail address belongs to an operator, and single sign-on never links an operator by e-mail: sign in with the password.",
        );
      const user = await tx.user.update({
        where: { id: byEmail.id },
        data: { oidcSubject: subject, emailVerifiedAt: byEmail.emailVerifiedAt ?? new Date() },
      });
      // The mapping's role and account are recorded, not applied: the local user keeps its own.
      await auditLink(tx, user, subject, clientIp, {
        created: false,
        role: user.role,
        mappedRole: rule.role,
        mappedAccountId: accountId,
      });
      return user;
    });
  }

  /** The account an owner or member rule names; refused when it is missing or disabled. */
  private async ruleAccount(rule: OidcRule): Promise<string> {
    const account = await this.prisma.account.findFirst({
      where: /^[0-9a-f-]{36}$/i.test(rule.account!) ? { id: rule.account! } : { name: rule.account! },
    });
    if (!account)
      throw new OidcError(
        403,
        "account_missing",
        `The account ${rule.account} that this identity maps to does not exist.`,
      );
    if (account.status !== "active")
      throw new OidcError(403, "account_disabled", "The account this identity maps to is disabled.");
    return account.id;
  }
}

/** Every link of a user to an identity (created by SSO or a local user linked by e-mail) is audited. */
function auditLink(
  tx: AuditDb,
  user: { id: string; email: string; accountId: string | null },
  subject: string,
  clientIp: string | null,
  detail: Record<string, unknown>,
) {
  return audit(
    tx,
    { type: "user", userId: user.id, email: user.email, address: clientIp },
    {
      action: "auth.sso_link",
      subjectType: "user",
      subjectId: user.id,
      accountId: user.accountId,
      after: { identity: subject, ...detail },
    },
  );
}
