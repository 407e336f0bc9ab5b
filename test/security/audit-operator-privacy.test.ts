import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";

// Issue 25, item 15 (audit log): an owner reading their account's audit log saw the operators' e-mails and
// client addresses (a top-up by an operator, say). Now a non-operator sees "operator" and no address or user id
// for a row whose actor is an operator (an operator user, the admin token, the CLI), in the log and in its
// export; operators still see every row as written. The embedded test gateway trusts 127.0.0.1 as a proxy, so
// X-Forwarded-For plays the client addresses.

let gw: Gateway;
let base: string;
let operator: string;
let owner: string;
const OPERATOR = "operator@modelgate.local";
const OPERATOR_PASSWORD = "operator-password-1";
const OPERATOR_IP = "203.0.113.77";
const OWNER_IP = "198.51.100.5";
const PASSWORD = "Correct-Horse-42";

async function gql<T>(cookie: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    // each principal from its own address
    headers: {
      "content-type": "application/json",
      cookie,
      "x-forwarded-for": cookie === operator ? OPERATOR_IP : OWNER_IP,
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data!;
}
async function signIn(email: string, password: string, ip: string) {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": ip },
    body: JSON.stringify({
      query: "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }",
      variables: { e: email, p: password },
    }),
  });
  return res.headers
    .getSetCookie()
    .find((c) => c.startsWith("mg_session="))!
    .split(";")[0]!;
}

interface Entry {
  action: string;
  actorType: string;
  actorEmail: string | null;
  actorAddress: string | null;
  actorUserId: string | null;
}
const LOG = "{ auditLog(first: 200) { nodes { action actorType actorEmail actorAddress actorUserId } } }";
const log = async (cookie: string) => (await gql<{ auditLog: { nodes: Entry[] } }>(cookie, LOG)).auditLog.nodes;

let accountId: string;

beforeAll(async () => {
  gw = await startGateway("embedded", { config: {}, env: { MODELGATE_OPERATOR_PASSWORD: OPERATOR_PASSWORD } });
  base = gw.controlPlaneBase;
  accountId = (await gw.admin<{ id: string }>("account create", { name: "acme", balance: "1" })).id;
  await gw.admin("user create", { email: "owner@acme.test", password: PASSWORD, role: "owner", account: "acme" });
  operator = await signIn(OPERATOR, OPERATOR_PASSWORD, OPERATOR_IP);
  owner = await signIn("owner@acme.test", PASSWORD, OWNER_IP);
  // an operator's change to the account, and one through the admin token
  await gql(operator, 'mutation($a: ID!) { topUp(accountId: $a, amount: "2") { id } }', { a: accountId });
  await gw.admin("account topup", { account: "acme", amount: "3" });
}, 240_000);

afterAll(async () => {
  await gw?.stop();
});

describe("an owner's audit log does not show the operators' e-mails and addresses (issue 25, item 15)", () => {
  it("the owner sees 'operator', no address and no user id for the operators' rows", async () => {
    const topups = (await log(owner)).filter((e) => e.action === "account.topup");
    expect(topups).toHaveLength(2);
    for (const e of topups) {
      expect(e.actorEmail).toBe("operator");
      expect(e.actorAddress).toBeNull();
      expect(e.actorUserId).toBeNull();
    }
    // the owner's own rows are shown as written
    const own = (await log(owner)).filter((e) => e.actorEmail === "owner@acme.test");
    expect(own.length).toBeGreaterThan(0);
  });

  it("the operators see every row as written", async () => {
    const mine = (await log(operator)).find((e) => e.action === "account.topup" && e.actorType === "user")!;
    expect(mine.actorEmail).toBe(OPERATOR);
    expect(mine.actorAddress).toBe(OPERATOR_IP);
  });

  it("the owner's export does not show them either", async () => {
    const started = await gql<{ startAuditExport: { id: string } }>(
      owner,
      "mutation { startAuditExport(format: CSV) { id } }",
    );
    const id = started.startAuditExport.id;
    const ready = await vi.waitFor(
      async () => {
        const e = (
          await gql<{ export: { status: string; downloadUrl: string | null } }>(
            owner,
            "query($id: ID!) { export(id: $id) { status downloadUrl } }",
            { id },
          )
        ).export;
        if (e.status !== "READY" && e.status !== "ready") throw new Error(`export ${e.status}`);
        return e;
      },
      { timeout: 30_000, interval: 200 },
    );
    const csv = await (await fetch(`${base}${ready.downloadUrl}`, { headers: { cookie: owner } })).text();
    expect(csv).toContain("account.topup");
    expect(csv).not.toContain(OPERATOR);
    expect(csv).not.toContain(OPERATOR_IP);
  });
});
