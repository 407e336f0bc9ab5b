import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { freePort } from "../helpers/processes.ts";

// Issue 25, item 3: single sign-on took over local accounts by e-mail. An identity whose provider did not vouch
// for the e-mail (no email_verified, or the text "false") was linked to the local user with that e-mail and
// given the mapping's role and account: the operator became a member of a customer, a customer's owner moved
// to another customer. Now only `email_verified: true` links, a linked local user keeps its role and account,
// an operator is never linked by e-mail, and each link is audited. The provider is a real oidc-provider (as in
// test/browser/oidc.test.ts); its login and consent forms are driven with fetch instead of a browser.

const CLIENT_ID = "modelgate-console";
const CLIENT_SECRET = "a-client-secret-of-some-length-0123456789";
// The provider sends the browser here; the test carries the code to the gateway's own callback (the gateway
// checks the callback against this registered URL, not against the host the request came in on).
const REDIRECT = "http://127.0.0.1:9/auth/oidc/callback";
const OPERATOR = "operator@modelgate.local";
const OPERATOR_PASSWORD = "operator-password-1";
const PASSWORD = "Correct-Horse-42";

/** What the provider says about each login; changed by the tests between sign-ins. */
const people: Record<string, { email: string; email_verified?: unknown; groups: string[] }> = {};

let idp: Server;
let issuer: string;
let gw: Gateway;
let base: string;

beforeAll(async () => {
  const idpPort = await freePort();
  issuer = `http://127.0.0.1:${idpPort}`;
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
  idp = createServer(provider.callback());
  await new Promise<void>((r) => idp.listen(idpPort, "127.0.0.1", r));
  gw = await startGateway("embedded", {
    config: {},
    env: {
      MODELGATE_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
      MODELGATE_OIDC_ISSUER: issuer,
      MODELGATE_OIDC_CLIENT_ID: CLIENT_ID,
      MODELGATE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      MODELGATE_OIDC_REDIRECT_URL: REDIRECT,
      MODELGATE_OIDC_ROLES: JSON.stringify([
        { claim: "groups", value: "mg-ops", role: "operator" },
        { claim: "groups", value: "other-members", role: "member", account: "other" },
        { claim: "groups", value: "acme-owners", role: "owner", account: "acme" },
      ]),
    },
  });
  base = gw.controlPlaneBase;
  await gw.admin("account create", { name: "acme", balance: "1" });
  await gw.admin("account create", { name: "other", balance: "1" });
  await gw.admin("user create", { email: "owner@acme.test", password: PASSWORD, role: "owner", account: "acme" });
  await gw.admin("user create", { email: "carol@acme.test", password: PASSWORD, role: "member", account: "acme" });
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  await new Promise((r) => (idp ? idp.close(r) : r(undefined)));
});

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
async function ssoSignIn(login: string): Promise<{ location: string; session: string | null }> {
  const gwJar = new Jar();
  const idpJar = new Jar();
  const start = await fetch(`${base}/auth/oidc/login`, { redirect: "manual" });
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

interface Me {
  email: string;
  role: string;
  account: { name: string } | null;
}
async function gql(cookie: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: Record<string, unknown>; errors?: { message: string }[] };
}
const me = async (cookie: string) =>
  ((await gql(cookie, "{ me { user { email role account { name } } } }")).data?.me as { user: Me } | null)?.user ??
  null;
async function passwordSignIn(email: string, password: string): Promise<string> {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      query: "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }",
      variables: { e: email, p: password },
    }),
  });
  const cookie = res.headers
    .getSetCookie()
    .find((c) => c.startsWith("mg_session="))
    ?.split(";")[0];
  expect(cookie, JSON.stringify(await res.json())).toBeDefined();
  return cookie!;
}
const refused = (r: { location: string; session: string | null }) => {
  expect(r.session).toBeNull();
  expect(r.location).toMatch(/^\/login\?ssoError=/);
};

describe("single sign-on never takes a local account over through its e-mail (issue 25, item 3)", () => {
  it("an identity without email_verified, or with the text 'false', is refused: the operator stays operator", async () => {
    people.eve = { email: OPERATOR, groups: ["other-members"] }; // no email_verified at all
    refused(await ssoSignIn("eve"));
    people.eve2 = { email: OPERATOR, email_verified: "false", groups: ["other-members"] };
    refused(await ssoSignIn("eve2"));
    people.eve3 = { email: "owner@acme.test", email_verified: "true", groups: ["other-members"] };
    refused(await ssoSignIn("eve3"));
    expect(await me(await passwordSignIn(OPERATOR, OPERATOR_PASSWORD))).toEqual({
      email: OPERATOR,
      role: "operator",
      account: null,
    });
    expect(await me(await passwordSignIn("owner@acme.test", PASSWORD))).toEqual({
      email: "owner@acme.test",
      role: "owner",
      account: { name: "acme" },
    });
  });

  it("an operator is never linked by e-mail, even when the provider vouches for it", async () => {
    people.olga = { email: OPERATOR, email_verified: true, groups: ["other-members"] };
    refused(await ssoSignIn("olga"));
    people.olga.groups = ["mg-ops"];
    refused(await ssoSignIn("olga"));
    expect((await me(await passwordSignIn(OPERATOR, OPERATOR_PASSWORD)))?.role).toBe("operator");
  });

  it("a verified e-mail links a local user, who keeps its role and account; the link is audited", async () => {
    people.owen = { email: "owner@acme.test", email_verified: true, groups: ["other-members"] };
    const first = await ssoSignIn("owen");
    expect(first.session).not.toBeNull();
    expect(await me(first.session!)).toEqual({ email: "owner@acme.test", role: "owner", account: { name: "acme" } });
    // and at the next sign-in too, whatever the mapping says then
    people.owen.groups = ["mg-ops"];
    const second = await ssoSignIn("owen");
    expect(await me(second.session!)).toEqual({ email: "owner@acme.test", role: "owner", account: { name: "acme" } });
    const op = await passwordSignIn(OPERATOR, OPERATOR_PASSWORD);
    const log = await gql(
      op,
      '{ auditLog(filter: { action: "auth.sso_link" }) { nodes { actorEmail subjectId after accountId } } }',
    );
    const nodes = (log.data?.auditLog as { nodes: { actorEmail: string; after: string }[] }).nodes;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.actorEmail).toBe("owner@acme.test");
    expect(JSON.parse(nodes[0]!.after)).toMatchObject({
      identity: `${issuer}#owen`,
      created: false,
      role: "owner",
      mappedRole: "member",
    });
  });

  it("a user SSO created follows the mapping at each sign-in, as documented", async () => {
    people.nina = { email: "nina@new.test", email_verified: true, groups: ["other-members"] };
    const first = await ssoSignIn("nina");
    expect(await me(first.session!)).toEqual({ email: "nina@new.test", role: "member", account: { name: "other" } });
    people.nina.groups = ["acme-owners"];
    const second = await ssoSignIn("nina");
    expect(await me(second.session!)).toEqual({ email: "nina@new.test", role: "owner", account: { name: "acme" } });
  });
});
