import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { type Idp, ssoSignIn, startIdp } from "../helpers/oidc-idp.ts";

// Issue 25, item 15 (sign-in page): the identity provider's error_description was put on the sign-in page as is
// (through ?ssoError=<text>, which anyone can also write: text injection). Now the callback redirects with a
// fixed code and the page shows its own text for it. And a returnTo with a control character created a session
// and still failed the sign-in (the Location header refused it): it is now replaced by "/" before any session.

let idp: Idp;
let gw: Gateway;
let base: string;

beforeAll(async () => {
  idp = await startIdp();
  gw = await startGateway("embedded", {
    config: {},
    env: idp.env([{ claim: "groups", value: "acme-owners", role: "owner", account: "acme" }]),
  });
  base = gw.controlPlaneBase;
  await gw.admin("account create", { name: "acme", balance: "1" });
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  await idp?.close();
});

const INJECTED = "Your account is locked. Call +1-555-0100 and give them your password";

describe("the sign-in page shows no text from the identity provider (issue 25, item 15)", () => {
  it("the provider's error becomes a fixed code; its description goes nowhere", async () => {
    for (const [error, code] of [
      ["access_denied", "provider_denied"],
      ["temporarily_unavailable", "provider_unavailable"],
      ["<b>made-up</b>", "provider_error"],
    ]) {
      const q = new URLSearchParams({ error: error!, error_description: INJECTED, state: "x" });
      const res = await fetch(`${base}/auth/oidc/callback?${q}`, { redirect: "manual" });
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe(`/login?ssoError=${code}`);
      expect(res.headers.getSetCookie().some((c) => c.startsWith("mg_session="))).toBe(false);
    }
  });

  it("the sign-in page's own failures are codes too", async () => {
    const res = await fetch(`${base}/auth/oidc/callback?code=forged&state=forged`, { redirect: "manual" });
    expect(res.headers.get("location")).toBe("/login?ssoError=expired");
  });

  it("a returnTo with a control character is replaced by / before the session: the sign-in succeeds", async () => {
    idp.people.alice = { email: "alice@acme.test", email_verified: true, groups: ["acme-owners"] };
    for (const bad of ["/keys\u0001x", "/keys\u007f", "/usage\u0085", "/k\u00e9ys"]) {
      const r = await ssoSignIn(base, "alice", bad);
      expect(r.location, JSON.stringify(bad)).toBe("/");
      expect(r.session).not.toBeNull();
    }
    const ok = await ssoSignIn(base, "alice", "/keys?x=1");
    expect(ok.location).toBe("/keys?x=1");
  });
});
