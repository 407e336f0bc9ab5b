import { Secret, TOTP } from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";

// Issue 12, items 7, 8, 10 and 15 (tokens): the sign-in and step-up checks against the embedded product.
// The embedded test gateway trusts 127.0.0.1 as a proxy, so X-Forwarded-For plays other client addresses.

let gw: Gateway;
let base: string;
const PASSWORD = "Correct-Horse-42";

beforeAll(async () => {
  gw = await startGateway("embedded", { config: {} });
  base = gw.bases[0]!;
  await gw.admin("account create", { name: "acme", balance: "1" });
}, 240_000);

afterAll(async () => {
  await gw?.stop();
});

interface Gql {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

async function gql(
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ body: Gql; cookie: string | null }> {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const cookie =
    res.headers
      .getSetCookie()
      .find((c) => c.startsWith("mg_session="))
      ?.split(";")[0] ?? null;
  return { body: (await res.json()) as Gql, cookie };
}
const LOGIN = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }";
const code = (r: { body: Gql }) => r.body.errors?.[0]?.extensions?.code ?? "OK";
const from = (ip: string) => ({ "x-forwarded-for": ip });

async function user(email: string) {
  await gw.admin("user create", { email, password: PASSWORD, role: "owner", account: "acme" });
}
async function signIn(email: string, password = PASSWORD, ip = "198.51.100.1") {
  const r = await gql(LOGIN, { e: email, p: password }, from(ip));
  expect(code(r)).toBe("OK");
  return r.cookie!;
}

describe("sign-in throttling by e-mail and client address (item 8)", () => {
  it("60 parallel guesses check at most five passwords", async () => {
    await user("parallel@acme.test");
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        gql(LOGIN, { e: "parallel@acme.test", p: "wrong-password" }, from("203.0.113.9")),
      ),
    );
    const codes = answers.map(code);
    expect(codes.filter((c) => c === "UNAUTHENTICATED")).toHaveLength(5);
    expect(codes.filter((c) => c === "TOO_MANY_REQUESTS")).toHaveLength(55);
  });

  it("nobody can lock a user out from elsewhere, the default operator included", async () => {
    await user("victim@acme.test");
    for (let i = 0; i < 8; i++) await gql(LOGIN, { e: "victim@acme.test", p: "wrong-password" }, from("203.0.113.66"));
    expect(code(await gql(LOGIN, { e: "victim@acme.test", p: PASSWORD }, from("203.0.113.66")))).toBe(
      "TOO_MANY_REQUESTS",
    );
    // the victim, from their own address, signs in
    await signIn("victim@acme.test", PASSWORD, "198.51.100.20");
    for (let i = 0; i < 8; i++)
      await gql(LOGIN, { e: "operator@modelgate.local", p: "wrong-password" }, from("203.0.113.66"));
    expect(code(await gql(LOGIN, { e: "operator@modelgate.local", p: "wrong-password" }, from("198.51.100.21")))).toBe(
      "UNAUTHENTICATED",
    );
  });

  it("answers an unknown e-mail exactly as a known one", async () => {
    await user("known@acme.test");
    const run = async (email: string) => {
      const out: string[] = [];
      for (let i = 0; i < 7; i++) {
        const r = await gql(LOGIN, { e: email, p: "wrong-password" }, from("203.0.113.77"));
        out.push(`${code(r)}:${r.body.errors?.[0]?.message.replace(/after .*$/, "after <time>")}`);
      }
      return out;
    };
    expect(await run("nobody-here@acme.test")).toEqual(await run("known@acme.test"));
  });
});

describe("step-up checks (item 7) and TOTP codes (item 10)", () => {
  let cookie: string;
  let totp: TOTP;
  let recovery: string[];

  beforeAll(async () => {
    await user("stepup@acme.test");
    cookie = await signIn("stepup@acme.test");
    const enrol = await gql("mutation { enrollTotp { secret } }", {}, { cookie });
    totp = new TOTP({
      algorithm: "SHA1",
      digits: 6,
      period: 30,
      secret: Secret.fromBase32((enrol.body.data!.enrollTotp as { secret: string }).secret),
    });
    const confirmed = await gql("mutation($c: String!) { confirmTotp(code: $c) }", { c: totp.generate() }, { cookie });
    recovery = confirmed.body.data!.confirmTotp as string[];
    expect(recovery).toHaveLength(10);
  });

  it("a TOTP code completes one sign-in, not two", async () => {
    const next = totp.generate({ timestamp: Date.now() + 30_000 }); // the confirming code's period is used up
    const a = await gql(LOGIN, { e: "stepup@acme.test", p: PASSWORD }, from("198.51.100.30"));
    const b = await gql(LOGIN, { e: "stepup@acme.test", p: PASSWORD }, from("198.51.100.31"));
    const second = "mutation($c: String!) { verifySecondStep(code: $c) { email } }";
    expect(code(await gql(second, { c: next }, { cookie: a.cookie! }))).toBe("OK");
    expect(code(await gql(second, { c: next }, { cookie: b.cookie! }))).toBe("BAD_USER_INPUT");
  });

  it("changing the password needs the second factor when two-step is on", async () => {
    const change =
      "mutation($cur: String!, $new: String!, $c: String) { changePassword(currentPassword: $cur, newPassword: $new, code: $c) }";
    const r = await gql(change, { cur: PASSWORD, new: "Another-Password-1" }, { cookie });
    expect(code(r)).toBe("BAD_USER_INPUT");
    expect(r.body.errors?.[0]?.message).toContain("two-step verification is on");
  });

  it("a stolen session is no oracle: wrong codes and passwords are throttled", async () => {
    const disable = "mutation($c: String!) { disableTotp(code: $c) }";
    const codes: string[] = [];
    for (let i = 0; i < 7; i++) codes.push(code(await gql(disable, { c: "000000" }, { cookie })));
    expect(codes.slice(0, 5)).toEqual(Array(5).fill("BAD_USER_INPUT"));
    expect(codes.slice(5)).toEqual(["TOO_MANY_REQUESTS", "TOO_MANY_REQUESTS"]);
    // the right code too waits now, and so does the password check of changePassword (same budget)
    expect(
      code(await gql("mutation($c: String!) { regenerateRecoveryCodes(code: $c) }", { c: recovery[0] }, { cookie })),
    ).toBe("TOO_MANY_REQUESTS");
    const change =
      "mutation($cur: String!, $new: String!, $c: String) { changePassword(currentPassword: $cur, newPassword: $new, code: $c) }";
    expect(
      code(await gql(change, { cur: "guess-number-one", new: "Another-Password-1", c: recovery[0] }, { cookie })),
    ).toBe("TOO_MANY_REQUESTS");
  });
});

describe("a password change ends the access tokens (item 15)", () => {
  it("revokes every personal access token of the user", async () => {
    await user("tokens@acme.test");
    const cookie = await signIn("tokens@acme.test");
    const made = await gql(
      'mutation { createPersonalAccessToken(name: "ci", scopes: [read]) { token } }',
      {},
      { cookie },
    );
    const token = (made.body.data!.createPersonalAccessToken as { token: string }).token;
    const me = "{ me { user { email } } }";
    expect(code(await gql(me, {}, { authorization: `Bearer ${token}` }))).toBe("OK");
    const change =
      "mutation($cur: String!, $new: String!) { changePassword(currentPassword: $cur, newPassword: $new) }";
    expect(code(await gql(change, { cur: PASSWORD, new: "Another-Password-1" }, { cookie }))).toBe("OK");
    expect(code(await gql(me, {}, { authorization: `Bearer ${token}` }))).toBe("UNAUTHENTICATED");
  });
});
