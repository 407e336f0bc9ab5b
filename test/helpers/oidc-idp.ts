import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";
import { expect } from "vitest";
import { freePort } from "./processes.ts";

// A real OpenID provider (oidc-provider, PKCE required, its development login and consent forms) for the SSO
// tests, and a sign-in through it driven with fetch instead of a browser (test/browser/oidc.test.ts clicks).

export const CLIENT_ID = "modelgate-console";
export const CLIENT_SECRET = "a-client-secret-of-some-length-0123456789";
// The provider sends the browser here; the flow carries the code to the gateway's own callback (the gateway
// checks the callback against this registered URL, not against the host the request came in on).
export const REDIRECT = "http://127.0.0.1:9/auth/oidc/callback";

/** What the provider says about a login: its claims besides `sub` and `name`. */
export type Person = { email: string; email_verified?: unknown; groups: string[] };

export interface Idp {
  issuer: string;
  /** the logins it knows, changed by the tests between sign-ins */
  people: Record<string, Person>;
  /** the gateway's environment for this provider, with the given mapping rules */
  env(rules: unknown[]): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export async function startIdp(): Promise<Idp> {
  const people: Record<string, Person> = {};
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "groups"] },
    findAccount: (_ctx, id) => {
      const who = people[id];
      if (!who) return undefined;
      return { accountId: id, claims: () => ({ sub: id, name: id, ...who }) };
    },
    cookies: { keys: ["test-cookie-key-0123456789abcdef"] },
    ttl: { AccessToken: 600, IdToken: 600, Interaction: 600, Session: 600, Grant: 600, AuthorizationCode: 60 },
    conformIdTokenClaims: false,
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return {
    issuer,
    people,
    env: (rules) => ({
      MODELGATE_OIDC_ISSUER: issuer,
      MODELGATE_OIDC_CLIENT_ID: CLIENT_ID,
      MODELGATE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      MODELGATE_OIDC_REDIRECT_URL: REDIRECT,
      MODELGATE_OIDC_ROLES: JSON.stringify(rules),
    }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A minimal cookie jar: name=value pairs from Set-Cookie, sent back on every request to that origin. */
class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  }
  header = () => [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  get = (name: string) => this.cookies.get(name);
}

/**
 * The whole sign-in as a browser does it: the gateway's redirect out, the provider's login and consent forms,
 * and the gateway's callback. Returns where the gateway sent the browser and the session cookie, if any.
 */
export async function ssoSignIn(
  base: string,
  login: string,
  returnTo?: string,
): Promise<{ location: string; session: string | null }> {
  const gwJar = new Jar();
  const idpJar = new Jar();
  const query = returnTo === undefined ? "" : `?returnTo=${encodeURIComponent(returnTo)}`;
  const start = await fetch(`${base}/auth/oidc/login${query}`, { redirect: "manual" });
  gwJar.take(start);
  let url = start.headers.get("location")!;
  for (let step = 0; step < 20; step++) {
    if (url.startsWith(REDIRECT)) {
      const back = await fetch(`${base}/auth/oidc/callback${new URL(url).search}`, {
        redirect: "manual",
        headers: { cookie: gwJar.header() },
      });
      gwJar.take(back);
      const session = gwJar.get("mg_session");
      return { location: back.headers.get("location")!, session: session ? `mg_session=${session}` : null };
    }
    const res = await fetch(url, { redirect: "manual", headers: { cookie: idpJar.header() } });
    idpJar.take(res);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get("location")!, url).href;
      continue;
    }
    const html = await res.text();
    expect(res.status, html).toBe(200);
    // the provider's development forms: a login form, then a consent form
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    expect(action, html).toBeDefined();
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1] ?? "consent";
    const form = new URLSearchParams({ prompt, login, password: "anything" });
    const posted = await fetch(new URL(action!, url), {
      method: "POST",
      redirect: "manual",
      headers: { cookie: idpJar.header(), "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
    });
    idpJar.take(posted);
    url = new URL(posted.headers.get("location")!, url).href;
  }
  throw new Error("the sign-in did not come back to the gateway");
}
