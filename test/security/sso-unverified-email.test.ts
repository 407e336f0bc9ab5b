import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { type Idp, ssoSignIn as ssoSignIn_, startIdp } from "../helpers/oidc-idp.ts";

// Issue 25, item 3: single sign-on took over local accounts by e-mail. An identity whose provider did not vouch
// for the e-mail (no email_verified, or the text "false") was linked to the local user with that e-mail and
// given the mapping's role and account: the operator became a member of a customer, a customer's owner moved
// to another customer. Now only `email_verified: true` links, a linked local user keeps its role and account,
// an operator is never linked by e-mail, and each link is audited. The provider is a real oidc-provider (as in
// test/browser/oidc.test.ts); its login and consent forms are driven with fetch instead of a browser.

const OPERATOR = "operator@modelgate.local";
const OPERATOR_PASSWORD = "operator-password-1";
const PASSWORD = "Correct-Horse-42";

let idp: Idp;
let gw: Gateway;
let base: string;

beforeAll(async () => {
  idp = await startIdp();
  gw = await startGateway("embedded", {
    config: {},
    env: {
      MODELGATE_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
      ...idp.env([
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
  await idp?.close();
});

const ssoSignIn = (login: string) => ssoSignIn_(base, login);

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
    idp.people.eve = { email: OPERATOR, groups: ["other-members"] }; // no email_verified at all
    refused(await ssoSignIn("eve"));
    idp.people.eve2 = { email: OPERATOR, email_verified: "false", groups: ["other-members"] };
    refused(await ssoSignIn("eve2"));
    idp.people.eve3 = { email: "owner@acme.test", email_verified: "true", groups: ["other-members"] };
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
    idp.people.olga = { email: OPERATOR, email_verified: true, groups: ["other-members"] };
    refused(await ssoSignIn("olga"));
    idp.people.olga.groups = ["mg-ops"];
    refused(await ssoSignIn("olga"));
    expect((await me(await passwordSignIn(OPERATOR, OPERATOR_PASSWORD)))?.role).toBe("operator");
  });

  it("a verified e-mail links a local user, who keeps its role and account; the link is audited", async () => {
    idp.people.owen = { email: "owner@acme.test", email_verified: true, groups: ["other-members"] };
    const first = await ssoSignIn("owen");
    expect(first.session).not.toBeNull();
    expect(await me(first.session!)).toEqual({ email: "owner@acme.test", role: "owner", account: { name: "acme" } });
    // and at the next sign-in too, whatever the mapping says then
    idp.people.owen.groups = ["mg-ops"];
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
      identity: `${idp.issuer}#owen`,
      created: false,
      role: "owner",
      mappedRole: "member",
    });
  });

  it("a user SSO created follows the mapping at each sign-in, as documented", async () => {
    idp.people.nina = { email: "nina@new.test", email_verified: true, groups: ["other-members"] };
    const first = await ssoSignIn("nina");
    expect(await me(first.session!)).toEqual({ email: "nina@new.test", role: "member", account: { name: "other" } });
    idp.people.nina.groups = ["acme-owners"];
    const second = await ssoSignIn("nina");
    expect(await me(second.session!)).toEqual({ email: "nina@new.test", role: "owner", account: { name: "acme" } });
  });
});
