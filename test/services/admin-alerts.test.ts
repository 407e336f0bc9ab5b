import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { parseCli } from "../../control-plane/src/admin/cli.ts";
import { runAdminCommand, UsageError } from "../../control-plane/src/admin/commands.ts";
import { verify } from "../../control-plane/src/alerts/signature.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { admin } from "../helpers/processes.ts";

// Alerts in the admin CLI: the rules shown, set and removed, and webhooks added, test-sent (signature checked by
// a local receiver), listed and removed, through the same services and checks as the GraphQL mutations. The
// commands run in this process as the CLI runs them (its argv parser, then the command on the database, as
// in distributed mode); one run of the real binary checks the wiring (each costs seconds of start-up).

let fx: Awaited<ReturnType<typeof freshDatabase>>;
let dataDir: string;
let server: Server;
let hookUrl: string;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  fx = await freshDatabase("cli_alerts");
  dataDir = mkdtempSync(join(tmpdir(), "mg-cli-alerts-"));
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}, 60_000);

afterAll(async () => {
  await new Promise<void>((r) => server?.close(() => r()));
  await fx?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the CLI's JSON, read loosely
type Json = any;
const masterKey = randomBytes(32);

/** What `modelgate-admin <argv>` does, in this process: exit code 2 for a usage error, 1 for any other. */
async function cli(...argv: string[]): Promise<{ code: number; json: Json; stderr: string }> {
  try {
    const { command, args } = parseCli(argv);
    const ctx = { prisma: fx.db.prisma, masterKey, snapshotChanged: () => undefined, actor: { type: "cli" as const } };
    // The JSON the CLI prints (dates as text).
    return { code: 0, json: JSON.parse(JSON.stringify(await runAdminCommand(ctx, command, args))), stderr: "" };
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    return { code: usage ? 2 : 1, json: null, stderr: (err as Error).message };
  }
}
async function ok(...args: string[]): Promise<Json> {
  const r = await cli(...args);
  if (r.code !== 0) throw new Error(`modelgate-admin ${args.join(" ")}: ${r.code} ${r.stderr}`);
  return r.json;
}
const withPrivate = async <T>(run: () => Promise<T>): Promise<T> => {
  process.env.MODELGATE_WEBHOOK_ALLOW_PRIVATE = "1";
  try {
    return await run();
  } finally {
    delete process.env.MODELGATE_WEBHOOK_ALLOW_PRIVATE;
  }
};

describe("alerts in the admin CLI", () => {
  it("shows, sets and removes alert rules with the API's checks", async () => {
    await ok("account", "create", "--name", "acme");
    expect(await ok("alerts", "show", "--account", "acme")).toMatchObject({
      percents: [50, 80, 100],
      balanceBelow: null,
      keyExpiryDays: null,
      breakerOpen: false,
      emails: [],
      webhooks: [],
    });
    const set = await ok(
      "alerts",
      "set",
      "--account",
      "acme",
      "--percents",
      "80,50,80",
      "--balance-below",
      "5.5",
      "--key-expiry-days",
      "7",
      "--emails",
      "billing@acme.example, ops@acme.example",
    );
    expect(set).toMatchObject({
      percents: [50, 80],
      balanceBelow: "5.5",
      keyExpiryDays: 7,
      emails: ["billing@acme.example", "ops@acme.example"],
    });

    // The service's own checks, named by option.
    const breaker = await cli("alerts", "set", "--account", "acme", "--breaker-open", "true");
    expect(breaker.code).toBe(2);
    expect(breaker.stderr).toContain("--breaker-open: circuit-breaker alerts are the operators'");
    const percent = await cli("alerts", "set", "--account", "acme", "--percents", "0");
    expect(percent.code).toBe(2);
    expect(percent.stderr).toContain("--percents");
    const neither = await cli("alerts", "show");
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("name an account (--account) or the operators' own alerts (--operators)");
    const both = await cli("alerts", "show", "--account", "acme", "--operators");
    expect(both.code).toBe(2);

    // none removes a rule; the rest stays.
    expect(
      await ok("alerts", "set", "--account", "acme", "--balance-below", "none", "--key-expiry-days", "none"),
    ).toMatchObject({ percents: [50, 80], balanceBelow: null, keyExpiryDays: null, emails: expect.any(Array) });
    expect((await ok("alerts", "set", "--account", "acme", "--percents", "none", "--emails", "none")).percents).toEqual(
      [],
    );
    // The operators' own rules.
    expect(await ok("alerts", "set", "--operators", "--breaker-open", "true")).toMatchObject({
      operators: true,
      breakerOpen: true,
    });
    // Audited as the CLI, like every change.
    const audited = await fx.db.prisma.auditLog.findMany({ where: { action: "alerts.settings" } });
    expect(audited.length).toBe(4);
    expect(audited.every((a) => a.actorType === "cli")).toBe(true);
    expect(await ok("alerts", "events", "--account", "acme")).toEqual([]);
  }, 120_000);

  it("adds a webhook, test-sends a signed alert, lists the delivery and removes it", async () => {
    await ok("account", "create", "--name", "other");
    // A customer's webhook must be public unless the operator allows private receivers (the API's rule).
    const refused = await cli("webhook", "add", "--account", "acme", "--url", hookUrl);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--url");

    const added = await withPrivate(() => ok("webhook", "add", "--account", "acme", "--url", hookUrl));
    expect(added.secret).toMatch(/^whsec_/);
    expect((await ok("alerts", "show", "--account", "acme")).webhooks).toEqual([
      expect.objectContaining({ id: added.id, url: hookUrl }),
    ]);

    const sent = await withPrivate(() => ok("webhook", "test", added.id, "--account", "acme"));
    expect(sent).toMatchObject({ status: "delivered", attempts: 1, lastStatus: 204, kind: "test" });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(
      verify(
        added.secret,
        String(r.headers["x-modelgate-timestamp"]),
        r.body,
        String(r.headers["x-modelgate-signature"]),
      ),
    ).toBe(true);
    expect(JSON.parse(r.body)).toMatchObject({ type: "test" });
    expect(await ok("webhook", "deliveries", "--account", "acme", "--status", "delivered")).toEqual([
      expect.objectContaining({ id: sent.id, webhookId: added.id, status: "delivered" }),
    ]);

    // Another account's webhook is not found; the owner's goes.
    const foreign = await cli("webhook", "remove", added.id, "--account", "other");
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("webhook not found");
    expect(await ok("webhook", "remove", added.id, "--account", "acme")).toEqual({ id: added.id, removed: true });
    expect((await ok("alerts", "show", "--account", "acme")).webhooks).toEqual([]);
  }, 120_000);

  it("runs as the real binary", async () => {
    const r = await admin(
      { DATABASE_URL: fx.url, REDIS_URL: "", MODELGATE_DATA_DIR: dataDir },
      "alerts",
      "show",
      "--account",
      "acme",
    );
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ percents: [], breakerOpen: false, webhooks: [] });
  }, 120_000);
});
