import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockList, isIP } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { runAdminCommand } from "../admin/commands.ts";
import { createAccount } from "./accounts.ts";
import type { ServiceContext } from "./context.ts";
import { AppError } from "./errors.ts";
import { cidrSchema } from "./inputs.ts";
import { changeApiKey, checkRestrictions, getTrialPolicy, issueApiKey, setTrialPolicy } from "./key-policy.ts";

// The rules of accounts and keys, on a real (embedded) PGlite database: what GraphQL and the admin CLI share.

let dir: string;
let db: Database;
let ctx: ServiceContext;
let published = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-key-policy-"));
  db = await openDatabase({ dataDir: dir });
  await migrate(db.sql);
  ctx = { prisma: db.prisma, snapshotChanged: () => void published++, masterKey: Buffer.alloc(32, 7) };
}, 60_000);

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return "ok";
  } catch (err) {
    return err instanceof AppError ? `${err.code}:${String(err.extra.field ?? "")}` : `other:${(err as Error).message}`;
  }
};

describe("issuing keys", () => {
  it("gives an operator's key on a trial account the trial quota and expiry (the CLI's path too)", async () => {
    const trial = await createAccount(ctx, { name: "trial-op", kind: "trial" });
    const policy = { quotaMicro: 3_000_000n, expiresAt: new Date(Date.now() + 86_400_000) };
    await setTrialPolicy(ctx, trial.id, policy);
    const { row } = await issueApiKey(ctx, trial.id, {}, { operator: true });
    expect(row.quotaMicro).toBe(3_000_000n);
    expect(row.expiresAt?.toISOString()).toBe(policy.expiresAt.toISOString());

    // The admin CLI's `key create` goes through the same service: no quota-less key on a trial account.
    const out = (await runAdminCommand(ctx, "key create", { account: "trial-op" })) as { id: string };
    const cliKey = await ctx.prisma.apiKey.findUniqueOrThrow({ where: { id: out.id } });
    expect(cliKey.quotaMicro).toBe(3_000_000n);
    expect(cliKey.expiresAt?.toISOString()).toBe(policy.expiresAt.toISOString());
  });

  it("refuses a customer more quota or a later expiry than the trial's, and fills what they leave out", async () => {
    const trial = await createAccount(ctx, { name: "trial-customer", kind: "trial" });
    const policy = await getTrialPolicy(ctx, trial);
    expect(await code(issueApiKey(ctx, trial.id, { quotaMicro: policy.quotaMicro + 1n }, { operator: false }))).toBe(
      "BAD_USER_INPUT:quotaCap",
    );
    expect(await code(issueApiKey(ctx, trial.id, { quotaMicro: null }, { operator: false }))).toBe(
      "BAD_USER_INPUT:quotaCap",
    );
    const later = new Date(policy.expiresAt.getTime() + 1000);
    expect(await code(issueApiKey(ctx, trial.id, { expiresAt: later }, { operator: false }))).toBe(
      "BAD_USER_INPUT:expiresAt",
    );
    const { row } = await issueApiKey(ctx, trial.id, { quotaMicro: 1_000_000n }, { operator: false });
    expect(row.quotaMicro).toBe(1_000_000n);
    expect(row.expiresAt?.toISOString()).toBe(policy.expiresAt.toISOString());
    // and cannot lift the limits afterwards
    expect(await code(changeApiKey(ctx, row.id, { quotaMicro: null }, { operator: false }))).toBe(
      "BAD_USER_INPUT:quotaCap",
    );
    expect(await code(changeApiKey(ctx, row.id, { quotaMicro: null }, { operator: true }))).toBe("ok");
  });

  it("refuses a disabled account, a past expiry, an unknown account and a revoked key", async () => {
    const acct = await createAccount(ctx, { name: "standard-1" });
    expect(await code(issueApiKey(ctx, acct.id, { expiresAt: new Date(Date.now() - 1000) }, { operator: true }))).toBe(
      "BAD_USER_INPUT:expiresAt",
    );
    const { row } = await issueApiKey(ctx, acct.id, {}, { operator: false });
    expect(row.quotaMicro).toBeNull();
    expect(row.name).toBe("default");
    await ctx.prisma.apiKey.update({ where: { id: row.id }, data: { status: "revoked" } });
    expect(await code(changeApiKey(ctx, row.id, { name: "x" }, { operator: true }))).toBe("BAD_USER_INPUT:");
    await ctx.prisma.account.update({ where: { id: acct.id }, data: { status: "disabled" } });
    expect(await code(issueApiKey(ctx, acct.id, {}, { operator: true }))).toBe("BAD_USER_INPUT:");
    expect(await code(issueApiKey(ctx, "00000000-0000-4000-8000-000000000000", {}, { operator: true }))).toBe(
      "NOT_FOUND:",
    );
  });

  it("checks restrictions with the shared schemas (the CLI's --ip-allowlist refuses the same entries)", async () => {
    const check = (input: Record<string, unknown>) => checkRestrictions(ctx, input, (f) => f in input);
    const r = await check({ name: "  k  ", ipAllowlist: ["10.0.0.0/8", "10.0.0.0/8", "::1"], rpm: 5 });
    expect(r).toMatchObject({ name: "k", ipAllowlist: ["10.0.0.0/8", "::1"], rpm: 5 });
    for (const bad of ["10.0.0.0/33", "1.2.3", "::1/129", "10.0.0.1/8/1", "host.example"]) {
      expect(await code(check({ ipAllowlist: [bad] }))).toBe("BAD_USER_INPUT:ipAllowlist");
      const acct = await ctx.prisma.account.findFirstOrThrow({ where: { name: "trial-op" } });
      expect(await code(runAdminCommand(ctx, "key create", { account: acct.name, "ip-allowlist": bad }))).toMatch(
        /^other:.*ip-allowlist/,
      );
    }
    expect(await code(check({ rpm: 0 }))).toBe("BAD_USER_INPUT:rpm");
    expect(await code(check({ name: "" }))).toBe("BAD_USER_INPUT:name");
  });

  it("agrees with node's own parser on what is an address", () => {
    const samples = ["192.168.1.1", "256.1.1.1", "::ffff:1.2.3.4", "fe80::1", "01.2.3.4", "1.2.3.4 ", "", ":::"];
    for (const s of samples) {
      const ok = cidrSchema.safeParse(s).success;
      expect(ok, s).toBe(isIP(s.trim()) !== 0);
      if (ok) new BlockList().addAddress(s.trim(), isIP(s.trim()) === 4 ? "ipv4" : "ipv6"); // throws if node disagrees
    }
  });
});

describe("opening accounts", () => {
  it("gives one account and one CONFLICT for two concurrent calls with one name", async () => {
    const results = await Promise.all([
      code(createAccount(ctx, { name: "race" })),
      code(createAccount(ctx, { name: " race " })),
    ]);
    expect(results.sort()).toEqual(["CONFLICT:", "ok"]);
    expect(await ctx.prisma.account.count({ where: { name: "race" } })).toBe(1);
  });

  it("refuses an empty name and a negative opening balance", async () => {
    expect(await code(createAccount(ctx, { name: "   " }))).toBe("BAD_USER_INPUT:name");
    expect(await code(createAccount(ctx, { name: "neg", balanceMicro: -1n }))).toBe("BAD_USER_INPUT:initialBalance");
    expect(published).toBeGreaterThan(0);
  });
});
