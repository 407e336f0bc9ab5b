import { describe, expect, it } from "vitest";
import { matchRule, readOidcSettings, safeReturnTo } from "./oidc.ts";

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  MODELGATE_OIDC_ISSUER: "https://idp.example.test",
  MODELGATE_OIDC_CLIENT_ID: "mg",
  MODELGATE_OIDC_CLIENT_SECRET: "secret",
  MODELGATE_PUBLIC_URL: "https://gw.example.test/",
  MODELGATE_OIDC_ROLES: JSON.stringify([{ claim: "groups", value: "ops", role: "operator" }]),
  ...extra,
});

describe("single sign-on settings", () => {
  it("is off without an issuer, and derives the callback from the public URL", () => {
    expect(readOidcSettings({})).toBeNull();
    const s = readOidcSettings(env())!;
    expect(s.redirectUrl.href).toBe("https://gw.example.test/auth/oidc/callback");
    expect(s.scope).toBe("openid email profile");
  });

  it("refuses a half-configured SSO at start, naming what is missing", () => {
    expect(() => readOidcSettings(env({ MODELGATE_OIDC_CLIENT_SECRET: "" }))).toThrow(/MODELGATE_OIDC_CLIENT_SECRET/);
    expect(() => readOidcSettings(env({ MODELGATE_PUBLIC_URL: "" }))).toThrow(/MODELGATE_OIDC_REDIRECT_URL/);
    expect(() => readOidcSettings(env({ MODELGATE_OIDC_ROLES: "[{" }))).toThrow(/not JSON/);
    expect(() =>
      readOidcSettings(env({ MODELGATE_OIDC_ROLES: JSON.stringify([{ claim: "groups", value: "x", role: "owner" }]) })),
    ).toThrow(/names its account/);
  });
});

describe("claim mapping", () => {
  const rules = readOidcSettings(
    env({
      MODELGATE_OIDC_ROLES: JSON.stringify([
        { claim: "groups", value: "ops", role: "operator" },
        { claim: "hd", value: "acme.test", role: "member", account: "acme" },
        { claim: "admin", value: true, role: "owner", account: "acme" },
      ]),
    }),
  )!.rules;

  it("matches a list claim by membership and a scalar by equality, first rule first", () => {
    expect(matchRule(rules, { groups: ["staff", "ops"], hd: "acme.test" })?.role).toBe("operator");
    expect(matchRule(rules, { groups: ["staff"], hd: "acme.test" })?.role).toBe("member");
    expect(matchRule(rules, { admin: true })?.role).toBe("owner");
    expect(matchRule(rules, { groups: "opsx", hd: "evil.test" })).toBeNull();
    expect(matchRule(rules, {})).toBeNull();
  });
});

describe("return path after sign-in", () => {
  it("is a path of this origin, never another site", () => {
    expect(safeReturnTo("/keys?x=1")).toBe("/keys?x=1");
    for (const bad of ["//evil.test/", "/\\evil.test", "https://evil.test", "javascript:alert(1)", "", null])
      expect(safeReturnTo(bad)).toBe("/");
  });
});
