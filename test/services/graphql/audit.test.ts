import { Secret, TOTP } from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdminCommand } from "../../../control-plane/src/admin/commands.ts";
import { demoConfig, syncConfig } from "../../../control-plane/src/config/sync.ts";
import { auditRetentionDays, pruneAuditLog } from "../../../control-plane/src/audit/retention.ts";
import { Client, customer, exportFinished, OPERATOR, operatorClient, startHarness, type Harness } from "./harness.ts";

// The audit log (issue 18 §2): every kind of change leaves one row with who, from where, what, before and after;
// owners see their own account's rows only; no secret is ever written; the table refuses UPDATE and DELETE.

let h: Harness;
let ops: Client;
let a: Awaited<ReturnType<typeof customer>>;
let b: Awaited<ReturnType<typeof customer>>;
/** every secret value the test handles: none may appear anywhere in the audit log */
const secrets: string[] = [];

interface Row {
  id: string;
  action: string;
  actorType: string;
  actorUserId: string | null;
  actorEmail: string | null;
  actorVia: string | null;
  actorAddress: string | null;
  accountId: string | null;
  subjectType: string;
  subjectId: string | null;
  before: string | null;
  after: string | null;
}
const FIELDS =
  "id action actorType actorUserId actorEmail actorVia actorAddress accountId subjectType subjectId before after";

async function rows(c: Client, filter: Record<string, unknown> = {}, first = 200): Promise<Row[]> {
  const r = await c.gql(`query($f: AuditFilter, $n: Int) { auditLog(filter: $f, first: $n) { nodes { ${FIELDS} } } }`, {
    f: filter,
    n: first,
  });
  return r.auditLog.nodes as Row[];
}
const one = async (c: Client, action: string, subjectId?: string) => {
  const found = (await rows(c, { action, ...(subjectId ? { subjectId } : {}) }))[0];
  expect(found, `an audit row for ${action}`).toBeDefined();
  return { ...found!, before: JSON.parse(found!.before ?? "null"), after: JSON.parse(found!.after ?? "null") };
};

beforeAll(async () => {
  h = await startHarness("gql_audit");
  ops = await operatorClient(h);
  a = await customer(h, ops, "Audited");
  b = await customer(h, ops, "Bystander");
  secrets.push(OPERATOR.password, a.password, b.password);
});
afterAll(async () => {
  await h?.close();
});

describe("audit log", () => {
  it("records sign-ins and sign-in failures with the address, never the password", async () => {
    const bad = new Client(h.url);
    const wrong = "not-the-password-42";
    secrets.push(wrong);
    expect(
      await bad.code(`mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`, {
        e: a.email,
        p: wrong,
      }),
    ).toBe("UNAUTHENTICATED");
    const failed = await one(ops, "auth.login_failed");
    expect(failed).toMatchObject({
      actorType: "anonymous",
      accountId: a.accountId,
      subjectId: a.ownerId,
      after: { email: a.email, reason: "wrong_password" },
    });
    expect(failed.actorAddress).toMatch(/127\.0\.0\.1/);
    const ok = (await rows(ops, { action: "auth.login", actorUserId: a.ownerId }))[0]!;
    expect(ok).toMatchObject({ actorType: "user", actorEmail: a.email, accountId: a.accountId });
  });

  it("records customers, limits, status, top-ups and adjustments with the values before and after", async () => {
    const acc = await one(ops, "account.create", a.accountId);
    expect(acc).toMatchObject({
      actorType: "user",
      actorEmail: OPERATOR.email,
      actorVia: "session",
      accountId: a.accountId,
      after: { name: "Audited", balanceMicro: "100000000" },
    });
    expect(acc.actorAddress).toBeTruthy();

    await ops.gql(`mutation($a: ID!) { setAccountLimits(accountId: $a, rpm: 60, tpm: 1000) { id } }`, {
      a: a.accountId,
    });
    const limits = await one(ops, "account.limits", a.accountId);
    expect(limits.before).toEqual({ rpm: null, tpm: null, concurrency: null });
    expect(limits.after).toEqual({ rpm: 60, tpm: 1000, concurrency: null });

    await ops.gql(`mutation($a: ID!) { topUp(accountId: $a, amount: "25.5", note: "invoice 7") { balance } }`, {
      a: a.accountId,
    });
    const top = await one(ops, "account.topup", a.accountId);
    expect(top.before).toEqual({ balanceMicro: "100000000" });
    expect(top.after).toEqual({ balanceMicro: "125500000", amountMicro: "25500000", note: "invoice 7" });

    await ops.gql(
      `mutation($a: ID!) { adjustBalance(accountId: $a, amount: "-0.5", note: "goodwill reversal") { balance } }`,
      { a: a.accountId },
    );
    expect((await one(ops, "account.adjust", a.accountId)).after).toEqual({
      balanceMicro: "125000000",
      amountMicro: "-500000",
      note: "goodwill reversal",
    });

    await a.client.gql(`mutation { setAccountTimeZone(timeZone: "Europe/Berlin") { id } }`);
    expect(await one(a.client, "account.time_zone", a.accountId)).toMatchObject({
      actorUserId: a.ownerId,
      before: { timeZone: "UTC" },
      after: { timeZone: "Europe/Berlin" },
    });
    await a.client.gql(`mutation { setAccountBudgets(input: { daily: "5" }) { id } }`);
    expect((await one(a.client, "account.budgets", a.accountId)).after).toMatchObject({ budgetDayMicro: "5000000" });

    await ops.gql(`mutation($a: ID!) { setAccountStatus(accountId: $a, status: disabled) { id } }`, { a: b.accountId });
    await ops.gql(`mutation($a: ID!) { setAccountStatus(accountId: $a, status: active) { id } }`, { a: b.accountId });
    await b.client.login(b.email, b.password); // disabling signed B's users out
    const statuses = await rows(ops, { action: "account.status", accountId: b.accountId });
    expect(statuses.map((r) => JSON.parse(r.after!))).toEqual([{ status: "active" }, { status: "disabled" }]);
  });

  it("records models, upstreams (never the credential), routes and price contracts", async () => {
    const credential = "upstream-credential-SECRET-123";
    secrets.push(credential);
    await ops.gql(
      `mutation { upsertModel(input: { id: "audit-chat-2025-01-01", inputPrice: "1", outputPrice: "2" }) { id } }`,
    );
    const up = await ops.gql(
      `mutation($k: String) { upsertUpstream(input: { name: "audited-up", protocol: openai, baseUrl: "http://127.0.0.1:9", apiKey: $k }) { id } }`,
      { k: credential },
    );
    const upstreamId = up.upsertUpstream.id as string;
    await ops.gql(
      `mutation($id: ID!, $k: String) { upsertUpstream(input: { id: $id, name: "audited-up", protocol: openai, baseUrl: "http://127.0.0.1:10", apiKey: $k }) { id } }`,
      { id: upstreamId, k: `${credential}-2` },
    );
    secrets.push(`${credential}-2`);
    const route = await ops.gql(
      `mutation($u: ID!) { upsertRoute(input: { modelId: "audit-chat-2025-01-01", upstreamId: $u, upstreamModel: "gpt-x", weight: 3, priority: 1 }) { id } }`,
      { u: upstreamId },
    );
    await ops.gql(
      `mutation($a: ID!) { setPriceContract(input: { accountId: $a, modelId: "audit-chat-2025-01-01", inputPrice: "0.5", outputPrice: "1.5" }) { id } }`,
      { a: a.accountId },
    );
    await ops.gql(
      `mutation($a: ID!) { setPriceContract(input: { accountId: $a, modelId: "audit-chat-2025-01-01", inputPrice: "0.4", outputPrice: "1.5" }) { id } }`,
      { a: a.accountId },
    );
    await ops.gql(`mutation($id: ID!) { deleteRoute(id: $id) }`, { id: route.upsertRoute.id });

    expect((await one(ops, "model.create", "audit-chat-2025-01-01")).after).toMatchObject({
      id: "audit-chat-2025-01-01",
      inputPriceMicro: "1000000",
      outputPriceMicro: "2000000",
    });
    const upd = await one(ops, "upstream.update", upstreamId);
    expect(upd.before).toMatchObject({ baseUrl: "http://127.0.0.1:9", hasApiKey: true });
    expect(upd.after).toMatchObject({ baseUrl: "http://127.0.0.1:10", hasApiKey: true, apiKeyChanged: true });
    expect(upd.after).not.toHaveProperty("apiKeyEnc");
    expect((await one(ops, "route.create", route.upsertRoute.id)).after).toMatchObject({
      weight: 3,
      priority: 1,
      upstreamModel: "gpt-x",
    });
    expect((await one(ops, "route.delete", route.upsertRoute.id)).before).toMatchObject({ weight: 3 });
    const contract = await one(ops, "price_contract.set", "audit-chat-2025-01-01");
    expect(contract).toMatchObject({
      accountId: a.accountId,
      before: { inputPriceMicro: "500000" },
      after: { inputPriceMicro: "400000" },
    });
  });

  it("records keys (never the key value), users, invitations, 2FA and password changes by the owner", async () => {
    const created = await a.client.gql(
      `mutation { createApiKey(input: { name: "ci", rpm: 10 }) { key apiKey { id } } }`,
    );
    secrets.push(created.createApiKey.key);
    const keyId = created.createApiKey.apiKey.id as string;
    await a.client.gql(`mutation($id: ID!) { updateApiKey(id: $id, input: { name: "ci-2", rpm: 20 }) { id } }`, {
      id: keyId,
    });
    await a.client.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: keyId });
    const keyCreate = await one(a.client, "api_key.create", keyId);
    expect(keyCreate).toMatchObject({
      actorUserId: a.ownerId,
      actorType: "user",
      accountId: a.accountId,
      after: { name: "ci", rpm: 10 },
    });
    expect(keyCreate.after).not.toHaveProperty("keyHash");
    expect((await one(a.client, "api_key.update", keyId)).before).toMatchObject({ name: "ci", rpm: 10 });
    expect((await one(a.client, "api_key.update", keyId)).after).toMatchObject({ name: "ci-2", rpm: 20 });
    expect((await one(a.client, "api_key.revoke", keyId)).after).toMatchObject({ status: "revoked" });

    const inv = await a.client.gql(
      `mutation { createInvitation(email: "new.member@example.com", role: member) { token invitation { id } } }`,
    );
    secrets.push(inv.createInvitation.token);
    expect((await one(a.client, "invitation.create", inv.createInvitation.invitation.id)).after).toMatchObject({
      email: "new.member@example.com",
      role: "member",
    });
    const joiner = new Client(h.url);
    secrets.push("member-password-123");
    const joined = await joiner.gql(
      `mutation($t: String!) { acceptInvitation(token: $t, password: "member-password-123") { id } }`,
      { t: inv.createInvitation.token },
    );
    const accepted = await one(a.client, "invitation.accept", joined.acceptInvitation.id);
    expect(accepted).toMatchObject({ actorUserId: joined.acceptInvitation.id, accountId: a.accountId });
    expect(accepted.after).not.toHaveProperty("passwordHash");
    const inv2 = await a.client.gql(
      `mutation { createInvitation(email: "later@example.com") { token invitation { id } } }`,
    );
    secrets.push(inv2.createInvitation.token);
    await a.client.gql(`mutation($id: ID!) { revokeInvitation(id: $id) { id } }`, {
      id: inv2.createInvitation.invitation.id,
    });
    expect((await one(a.client, "invitation.revoke", inv2.createInvitation.invitation.id)).after).toMatchObject({
      email: "later@example.com",
    });
    await a.client.gql(`mutation($id: ID!) { removeMember(userId: $id) }`, { id: joined.acceptInvitation.id });
    expect((await one(a.client, "user.remove", joined.acceptInvitation.id)).before).toMatchObject({
      email: "new.member@example.com",
      role: "member",
    });
    await ops.gql(
      `mutation($a: ID!) { createUser(email: "second.owner@example.com", password: "second-owner-pass-1", role: owner, accountId: $a) { id } }`,
      { a: a.accountId },
    );
    secrets.push("second-owner-pass-1");
    expect((await one(ops, "user.create")).after).toMatchObject({ email: "second.owner@example.com", role: "owner" });

    // two-step verification: enrol, confirm, regenerate, disable
    const enrol = await a.client.gql(`mutation { enrollTotp { secret } }`);
    const secret = enrol.enrollTotp.secret as string;
    secrets.push(secret);
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 });
    const codes = (await a.client.gql(`mutation($c: String!) { confirmTotp(code: $c) }`, { c: totp.generate() }))
      .confirmTotp as string[];
    secrets.push(...codes);
    const regenerated = (
      await a.client.gql(`mutation($c: String!) { regenerateRecoveryCodes(code: $c) }`, { c: codes[0] })
    ).regenerateRecoveryCodes as string[];
    secrets.push(...regenerated);
    expect((await one(a.client, "totp.enable", a.ownerId)).after).toMatchObject({ twoStepEnabled: true });

    // password change (two-step is on: needs a code)
    const next = "a-brand-new-password-9";
    secrets.push(next);
    await a.client.gql(
      `mutation($p: String!, $n: String!, $c: String) { changePassword(currentPassword: $p, newPassword: $n, code: $c) }`,
      {
        p: a.password,
        n: next,
        c: totp.generate({ timestamp: Date.now() + 30_000 }),
      },
    );
    expect((await one(a.client, "user.password_change", a.ownerId)).actorUserId).toBe(a.ownerId);
    await a.client.gql(`mutation($c: String!) { disableTotp(code: $c) }`, { c: regenerated[0] });
    const mine = await rows(a.client, { action: "totp.*", subjectId: a.ownerId });
    expect(mine.map((r) => r.action)).toEqual(["totp.disable", "totp.recovery_codes", "totp.enable", "totp.enroll"]);

    // personal access tokens
    const pat = await ops.gql(
      `mutation { createPersonalAccessToken(name: "audit-script", scopes: [read, operator]) { token accessToken { id } } }`,
    );
    secrets.push(pat.createPersonalAccessToken.token);
    expect((await one(ops, "access_token.create", pat.createPersonalAccessToken.accessToken.id)).after).toMatchObject({
      name: "audit-script",
      tokenScopes: ["read", "operator"],
    });
    // a token's reads are attributed to the token's user, through a token
    const viaToken = new Client(h.url, pat.createPersonalAccessToken.token);
    expect((await rows(viaToken, {}, 1)).length).toBe(1);
  });

  it("records alert settings and webhooks, never the signing secret", async () => {
    await a.client.gql(`mutation { setAlertSettings(input: { percents: [75, 100], keyExpiryDays: 3 }) { percents } }`);
    const settings = await one(a.client, "alerts.settings");
    expect(settings).toMatchObject({
      accountId: a.accountId,
      actorUserId: a.ownerId,
      after: { percents: [75, 100], keyExpiryDays: 3 },
    });
    const hook = await ops.gql(
      `mutation { addAlertWebhook(operators: true, url: "http://127.0.0.1:9/hook") { secret webhook { id } } }`,
    );
    secrets.push(hook.addAlertWebhook.secret);
    const added = await one(ops, "alerts.webhook_add", hook.addAlertWebhook.webhook.id);
    expect(added.after).toMatchObject({ url: "http://127.0.0.1:9/hook" });
    expect(added.after).not.toHaveProperty("secretEnc");
    await ops.gql(`mutation($id: ID!) { removeAlertWebhook(operators: true, id: $id) }`, {
      id: hook.addAlertWebhook.webhook.id,
    });
    expect((await one(ops, "alerts.webhook_remove", hook.addAlertWebhook.webhook.id)).before).toEqual({
      url: "http://127.0.0.1:9/hook",
    });
  });

  it("records a config file's catalogue as the system, without its credentials", async () => {
    const config = demoConfig();
    config.upstreams.push({
      name: "cfg-up",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:11",
      apiKey: "cfg-upstream-secret-77",
    });
    secrets.push("cfg-upstream-secret-77");
    await syncConfig(h.app, config);
    expect(await one(ops, "config.sync")).toMatchObject({
      actorType: "system",
      after: { upstreams: ["demo", "cfg-up"], models: ["demo-chat-2025-01-01"] },
    });
  });

  it("records the admin CLI and admin token as such", async () => {
    await runAdminCommand({ ...h.app, actor: { type: "cli" } }, "account topup", { account: "Bystander", amount: "3" });
    await runAdminCommand({ ...h.app, actor: { type: "admin_token", address: "10.0.0.7" } }, "contract set", {
      account: "Bystander",
      model: "audit-chat-2025-01-01",
      input: "0.1",
      output: "0.2",
    });
    expect(await one(ops, "account.topup", b.accountId)).toMatchObject({ actorType: "cli", actorUserId: null });
    expect(await one(ops, "price_contract.set", "audit-chat-2025-01-01")).toMatchObject({
      actorType: "admin_token",
      actorAddress: "10.0.0.7",
      accountId: b.accountId,
    });
  });

  it("shows owners their own account's rows only, and members nothing", async () => {
    const seen = await rows(b.client, {}, 200);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.accountId === b.accountId)).toBe(true);
    // naming another account is refused, not silently widened
    expect(
      await b.client.code(`query($a: ID!) { auditLog(filter: { accountId: $a }) { nodes { id } } }`, {
        a: a.accountId,
      }),
    ).toBe("FORBIDDEN");
    // operators see both, and can narrow to one
    const all = await rows(ops, {}, 200);
    expect(
      all.some((r) => r.accountId === a.accountId) &&
        all.some((r) => r.accountId === b.accountId) &&
        all.some((r) => r.accountId === null),
    ).toBe(true);
    expect((await rows(ops, { accountId: b.accountId })).every((r) => r.accountId === b.accountId)).toBe(true);
    // a member of A cannot read the log
    await ops.gql(
      `mutation($a: ID!) { createUser(email: "plain.member@example.com", password: "plain-member-pass-1", role: member, accountId: $a) { id } }`,
      { a: a.accountId },
    );
    secrets.push("plain-member-pass-1");
    const member = new Client(h.url);
    await member.login("plain.member@example.com", "plain-member-pass-1");
    expect(await member.code(`{ auditLog { nodes { id } } }`)).toBe("FORBIDDEN");
  });

  it("pages with a cursor and filters by time", async () => {
    const first = await ops.gql(`{ auditLog(first: 3) { nodes { id } hasNextPage endCursor } }`);
    const second = await ops.gql(`query($c: String) { auditLog(first: 3, after: $c) { nodes { id } } }`, {
      c: first.auditLog.endCursor,
    });
    expect(first.auditLog.hasNextPage).toBe(true);
    const ids = [...first.auditLog.nodes, ...second.auditLog.nodes].map((n: { id: string }) => n.id);
    expect(new Set(ids).size).toBe(6);
    const future = await rows(ops, { from: new Date(Date.now() + 3600_000).toISOString() });
    expect(future).toEqual([]);
  });

  it("exports like the usage log, owners their own rows", async () => {
    const started = await b.client.gql(`mutation { startAuditExport(format: JSONL) { id kind status } }`);
    expect(started.startAuditExport).toMatchObject({ kind: "audit", status: "pending" });
    expect(await one(b.client, "export.start", started.startAuditExport.id)).toMatchObject({
      actorUserId: b.ownerId,
      accountId: b.accountId,
      after: { kind: "audit", format: "jsonl" },
    });
    let e = await exportFinished(b.client, started.startAuditExport.id);
    expect(e.status).toBe("ready");
    const res = await fetch(`${h.url}${e.downloadUrl}`, { headers: { cookie: b.client.cookie! } });
    expect(res.headers.get("content-disposition")).toMatch(/filename="audit-/);
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { account_id: string; action: string });
    expect(lines.length).toBe(e.rowCount);
    expect(lines.every((l) => l.account_id === b.accountId)).toBe(true);
    expect(lines.some((l) => l.action === "account.topup")).toBe(true);

    const csv = await ops.gql(`mutation { startAuditExport(format: CSV, filter: { action: "account.*" }) { id } }`);
    e = await exportFinished(ops, csv.startAuditExport.id);
    const text = await (await fetch(`${h.url}${e.downloadUrl}`, { headers: { cookie: ops.cookie! } })).text();
    const body = text.trim().split("\r\n");
    expect(body[0]).toBe(
      "created_at,id,actor_type,actor_user_id,actor_email,actor_via,actor_address,action,account_id,subject_type,subject_id,before,after",
    );
    expect(body.slice(1).every((l) => l.split(",")[7]!.startsWith("account."))).toBe(true);
    // B cannot download the operator's export
    expect((await fetch(`${h.url}${e.downloadUrl}`, { headers: { cookie: b.client.cookie! } })).status).toBe(404);
  });

  it("records sign-outs, refused step-ups (never the code or password tried) and export starts", async () => {
    const c = await customer(h, ops, "Stepper");
    secrets.push(c.password);
    // two-step verification on, then a change guarded by it asked with a wrong code, and a wrong password
    const secret = (await c.client.gql(`mutation { enrollTotp { secret } }`)).enrollTotp.secret as string;
    secrets.push(secret);
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 });
    secrets.push(
      ...((await c.client.gql(`mutation($c: String!) { confirmTotp(code: $c) }`, { c: totp.generate() }))
        .confirmTotp as string[]),
    );
    const wrongCode = "ABCD-EFGH-IJKL";
    secrets.push(wrongCode);
    expect(await c.client.code(`mutation($c: String!) { disableTotp(code: $c) }`, { c: wrongCode })).toBe(
      "BAD_USER_INPUT",
    );
    const wrongPassword = "not-my-password-77";
    secrets.push(wrongPassword);
    expect(
      await c.client.code(
        `mutation($p: String!, $n: String!, $c: String) { changePassword(currentPassword: $p, newPassword: $n, code: $c) }`,
        { p: wrongPassword, n: "never-set-password-1", c: "000000" },
      ),
    ).toBe("BAD_USER_INPUT");
    const refused = await rows(c.client, { action: "auth.step_up_failed", subjectId: c.ownerId });
    expect(refused.map((r) => [r.actorUserId, r.accountId, JSON.parse(r.after!)])).toEqual([
      [c.ownerId, c.accountId, { purpose: "user.password_change", reason: "wrong_password" }],
      [c.ownerId, c.accountId, { purpose: "totp.disable", reason: "wrong_code" }],
    ]);
    expect(refused[0]!.actorAddress).toMatch(/127\.0\.0\.1/);

    // an export started (the usage log's; the audit log's is checked with its export below)
    const started = await c.client.gql(`mutation { startExport(format: CSV, filter: { model: "m-1" }) { id } }`);
    const exported = await one(c.client, "export.start", started.startExport.id);
    expect(exported).toMatchObject({
      actorType: "user",
      actorUserId: c.ownerId,
      accountId: c.accountId,
      subjectType: "export",
      after: { kind: "usage", format: "csv", filters: expect.objectContaining({ model: "m-1" }) },
    });
    expect(exported.actorAddress).toMatch(/127\.0\.0\.1/);

    // sign-out: the session ends, and the log says who and from where
    await c.client.gql(`mutation { logout }`);
    const out = await one(ops, "auth.logout", c.ownerId);
    expect(out).toMatchObject({
      actorType: "user",
      actorUserId: c.ownerId,
      actorEmail: c.email,
      accountId: c.accountId,
      after: { secondStepPending: false },
    });
    expect(out.actorAddress).toMatch(/127\.0\.0\.1/);
    // a sign-in halfway through (password given, code not yet) that is abandoned is recorded too
    const half = new Client(h.url);
    await half.gql(`mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`, {
      e: c.email,
      p: c.password,
    });
    await half.gql(`mutation { logout }`);
    const halfOut = (await rows(ops, { action: "auth.logout", subjectId: c.ownerId }))[0]!;
    expect(JSON.parse(halfOut.after!)).toEqual({ secondStepPending: true });
  });

  it("never holds a secret, and refuses UPDATE, DELETE and TRUNCATE", async () => {
    const dump = JSON.stringify(await h.app.prisma.auditLog.findMany());
    expect(secrets.length).toBeGreaterThan(20);
    for (const s of secrets) expect(dump, "a secret in the audit log").not.toContain(s);
    expect(dump).not.toMatch(/passwordHash|totpSecretEnc|apiKeyEnc|keyHash|tokenHash|codeHash/);
    await expect(h.app.prisma.$executeRawUnsafe(`UPDATE audit_logs SET action = 'x'`)).rejects.toThrow(/append-only/);
    await expect(h.app.prisma.$executeRawUnsafe(`DELETE FROM audit_logs`)).rejects.toThrow(/append-only/);
    await expect(h.app.prisma.$executeRawUnsafe(`TRUNCATE audit_logs`)).rejects.toThrow(/append-only/);
    expect(await h.app.prisma.auditLog.count()).toBeGreaterThan(30);
  });

  // Last: it deletes every row older than the newest one.
  it("retention deletes only rows past it, records that it did, and is the only deletion", async () => {
    expect(auditRetentionDays({})).toBeNull();
    expect(auditRetentionDays({ MODELGATE_AUDIT_RETENTION_DAYS: "0" })).toBeNull();
    expect(auditRetentionDays({ MODELGATE_AUDIT_RETENTION_DAYS: "400" })).toBe(400);
    expect(() => auditRetentionDays({ MODELGATE_AUDIT_RETENTION_DAYS: "a year" })).toThrow(/whole number of days/);
    for (const bad of ["1e3", "0x10", "30.0", "-30", "9007199254740993"])
      expect(() => auditRetentionDays({ MODELGATE_AUDIT_RETENTION_DAYS: bad }), bad).toThrow(/whole number of days/);
    const prisma = h.app.prisma;
    // The newest row's time is the cutoff: everything before it is "older than the retention".
    const [row] = await prisma.$queryRaw<{ newest: Date }[]>`SELECT max(created_at) AS newest FROM audit_logs`;
    const newest = row!.newest;
    const older = await prisma.auditLog.count({ where: { createdAt: { lt: newest } } });
    const kept = await prisma.auditLog.count({ where: { createdAt: { gte: newest } } });
    expect(older).toBeGreaterThan(30);
    expect(await pruneAuditLog(prisma, null)).toBe(0); // no retention set: nothing goes
    expect(await pruneAuditLog(prisma, 90, new Date(newest.getTime() + 90 * 86_400_000))).toBe(older);
    expect(await prisma.auditLog.count({ where: { createdAt: { lt: newest } } })).toBe(0);
    // the newer rows stay, and the deletion is itself a row
    expect(await prisma.auditLog.count({ where: { createdAt: { gte: newest } } })).toBe(kept + 1);
    const pruned = await one(ops, "audit.prune");
    expect(pruned).toMatchObject({
      actorType: "system",
      subjectType: "audit_log",
      after: { retentionDays: 90, deletedBefore: newest.toISOString(), deleted: older },
    });
    // Naming a cutoff lets through nothing newer than it, and never an UPDATE or TRUNCATE.
    const attempt = (sql: string) =>
      prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT set_config('modelgate.audit_prune_before', ${newest.toISOString()}, true)`;
        await tx.$executeRawUnsafe(sql);
      });
    await expect(attempt(`DELETE FROM audit_logs`)).rejects.toThrow(/append-only/);
    await expect(attempt(`UPDATE audit_logs SET action = 'x'`)).rejects.toThrow(/append-only/);
    await expect(attempt(`TRUNCATE audit_logs`)).rejects.toThrow(/append-only/);
    expect(await prisma.auditLog.count()).toBe(kept + 1);
  });
});
