import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Provider from "oidc-provider";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, freePort, type Proc, repoRoot, startTs, waitForHttp } from "../helpers/processes.ts";

// Console sign-in through OpenID Connect, end to end: a real OpenID provider (oidc-provider, PKCE required)
// started here, the embedded product configured for it, Chromium clicking through the redirect, the
// provider's login and consent pages and back. The claim mapping decides the role; an unmapped identity is
// refused with the reason on the sign-in page.

const CHROMIUM = "/usr/bin/chromium";
const CLIENT_ID = "modelgate-console";
const CLIENT_SECRET = "a-client-secret-of-some-length-0123456789";
/** what the provider says about each login typed into its form */
const people: Record<string, { email: string; name: string; groups: string[] }> = {
  alice: { email: "alice@acme.test", name: "Alice Acme", groups: ["acme-admins"] },
  olga: { email: "olga@ops.test", name: "Olga Ops", groups: ["mg-ops", "staff"] },
  mallory: { email: "mallory@else.test", name: "Mallory", groups: ["staff"] },
};

let idp: Server;
let issuer: string;
let proc: Proc;
let base: string;
let dataDir: string;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(join(repoRoot, "console/dist/index.html")))
    throw new Error("the console is not built: run `npm run build -w console` first (npm test does)");
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser-deps`);
  const idpPort = await freePort();
  const port = await freePort();
  issuer = `http://127.0.0.1:${idpPort}`;
  base = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${base}/auth/oidc/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "groups"] },
    findAccount: (_ctx, id) => {
      const who = people[id];
      if (!who) return undefined;
      return {
        accountId: id,
        claims: () => ({ sub: id, email: who.email, email_verified: true, name: who.name, groups: who.groups }),
      };
    },
    cookies: { keys: ["test-cookie-key-0123456789abcdef"] },
    ttl: { AccessToken: 600, IdToken: 600, Interaction: 600, Session: 600, Grant: 600, AuthorizationCode: 60 },
    conformIdTokenClaims: false, // the claims go in the ID token itself, which is what modelgate reads
  });
  idp = createServer(provider.callback());
  await new Promise<void>((r) => idp.listen(idpPort, "127.0.0.1", r));

  dataDir = await mkdtemp(join(tmpdir(), "modelgate-oidc-"));
  const env = {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    MODELGATE_OPERATOR_PASSWORD: "operator-password-1",
    MODELGATE_OIDC_ISSUER: issuer,
    MODELGATE_OIDC_CLIENT_ID: CLIENT_ID,
    MODELGATE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
    MODELGATE_PUBLIC_URL: base,
    MODELGATE_OIDC_LABEL: "Example SSO",
    MODELGATE_OIDC_ROLES: JSON.stringify([
      { claim: "groups", value: "mg-ops", role: "operator" },
      { claim: "groups", value: "acme-admins", role: "owner", account: "acme" },
    ]),
  };
  proc = startTs("control-plane/src/main/embedded.ts", env);
  await waitForHttp(`${base}/readyz`, proc, 120_000);
  const account = await admin(env, "account", "create", "--name", "acme", "--balance", "10");
  expect(account.code, account.stderr).toBe(0);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await proc?.stop();
  await new Promise((r) => (idp ? idp.close(r) : r(undefined)));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Clicks through the console's SSO button and the provider's login and consent pages. */
async function signInThroughIdp(login: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.getByTestId("sso-login").click();
  await page.waitForURL((u) => u.origin === issuer);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL((u) => u.origin === base);
  return { context, page };
}

const me = (page: Page) =>
  page.evaluate(async () => {
    const res = await fetch("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ me { user { email role account { name } } } }" }),
    });
    return (await res.json()) as {
      data?: { me: { user: { email: string; role: string; account: { name: string } | null } } | null };
    };
  });

describe("single sign-on (OpenID Connect, code flow with PKCE)", () => {
  it("the sign-in page offers it", async () => {
    const res = await fetch(`${base}/auth/oidc`);
    expect(await res.json()).toEqual({ enabled: true, label: "Example SSO" });
  });

  it("signs a mapped identity in as the owner of its account", async () => {
    const { context, page } = await signInThroughIdp("alice");
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    expect((await me(page)).data?.me?.user).toEqual({
      email: "alice@acme.test",
      role: "owner",
      account: { name: "acme" },
    });
    const cookies = await context.cookies(base);
    expect(cookies.find((c) => c.name === "mg_oidc")).toBeUndefined();
    expect(cookies.find((c) => c.name === "mg_session")?.httpOnly).toBe(true);
    await context.close();
  });

  it("maps a group to the operator role", async () => {
    const { context, page } = await signInThroughIdp("olga");
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    expect((await me(page)).data?.me?.user).toEqual({ email: "olga@ops.test", role: "operator", account: null });
    await context.close();
  });

  it("refuses an identity no rule maps, with the reason on the sign-in page", async () => {
    const { context, page } = await signInThroughIdp("mallory");
    await page.getByTestId("sso-error").waitFor();
    expect(await page.getByTestId("sso-error").textContent()).toContain("no role in modelgate");
    expect((await me(page)).data?.me ?? null).toBeNull();
    await context.close();
  });

  it("shows its own message for an error code, never text from the URL (issue 25, item 15)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const injected = "Your account is locked. Call +1-555-0100 and give them your password";
    await page.goto(`${base}/login?ssoError=${encodeURIComponent(injected)}`);
    await page.getByTestId("sso-error").waitFor();
    const unknown = (await page.getByTestId("sso-error").textContent()) ?? "";
    expect(unknown).not.toContain("555");
    expect(unknown).toContain("did not complete");
    await page.goto(`${base}/login?ssoError=provider_denied`);
    await page.getByTestId("sso-error").waitFor();
    expect(await page.getByTestId("sso-error").textContent()).toContain("did not sign you in");
    await context.close();
  });

  it("refuses a callback without the flow's cookie (state, nonce and verifier live only there)", async () => {
    const res = await fetch(`${base}/auth/oidc/callback?code=forged&state=forged`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toMatch(/^\/login\?ssoError=/);
    expect(res.headers.get("set-cookie") ?? "").not.toContain("mg_session=mgs");
  });
});
