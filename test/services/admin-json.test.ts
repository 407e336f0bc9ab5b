import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandNames } from "../../control-plane/src/admin/commands.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { admin, repoRoot, run } from "../helpers/processes.ts";

// `--json` is JSON: every command docs/cli.md documents, run as the real CLI on a real Postgres, prints one JSON
// document on stdout and nothing else, so `| jq` works for whoever scripts it. One run goes through
// `npm run -s admin` itself, build step included, whose chatter must stay off stdout.

let fx: Awaited<ReturnType<typeof freshDatabase>>;
let dataDir: string;
let receiver: Server;
let hookUrl: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  fx = await freshDatabase("cli_json");
  dataDir = mkdtempSync(join(tmpdir(), "mg-cli-json-"));
  receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  await fx.db.prisma.model.create({
    data: { id: "json-chat-2025-01-01", inputPriceMicro: 1_000_000n, outputPriceMicro: 2_000_000n },
  });
  // an upstream with a key pool, for `upstream key disable|enable` (the secret is never opened by them)
  await fx.db.prisma.upstream.create({
    data: {
      name: "json-up",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      keys: { create: [{ id: "k1", apiKeyEnc: "sealed" }] },
    },
  });
  env = { DATABASE_URL: fx.url, REDIS_URL: "", MODELGATE_DATA_DIR: dataDir, MODELGATE_WEBHOOK_ALLOW_PRIVATE: "1" };
}, 60_000);

afterAll(async () => {
  await new Promise<void>((r) => receiver?.close(() => r()));
  await fx?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The commands docs/cli.md's table documents (the leading lowercase words of each row's command). */
function documentedCommands(): string[] {
  const doc = readFileSync(join(repoRoot, "docs/cli.md"), "utf8");
  const names = [...doc.matchAll(/^\| `([a-z]+(?: [a-z]+)+)[ `]/gm)].map((m) => m[1]!);
  return [...new Set(names)];
}

/** Runs the CLI with --json; stdout must be exactly one JSON document. */
async function json(...args: string[]): Promise<unknown> {
  const r = await admin(env, ...args);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
}

describe("the admin CLI's --json", () => {
  it("documents every command", () => {
    expect(documentedCommands().sort()).toEqual([...commandNames].sort());
  });

  it("prints only JSON on stdout for each documented command", async () => {
    const ran = new Set<string>();
    const cli = async (...args: string[]) => {
      const three = args.slice(0, 3).join(" ");
      ran.add((commandNames as string[]).includes(three) ? three : `${args[0]} ${args[1]}`);
      return json(...args);
    };
    expect(await cli("account", "create", "--name", "acme", "--balance", "10")).toMatchObject({ balance: "10" });
    expect(await cli("account", "topup", "--account", "acme", "--amount", "5")).toMatchObject({ balance: "15" });
    expect(await cli("account", "show", "--account", "acme")).toMatchObject({ balanceMicro: "15000000" });
    expect(
      await cli("account", "update", "--account", "acme", "--rpm", "100", "--time-zone", "Europe/Berlin"),
    ).toMatchObject({ rpm: 100, timeZone: "Europe/Berlin" });
    const key = (await cli("key", "create", "--account", "acme", "--name", "ci")) as { id: string; key: string };
    expect(key.key).toMatch(/^sk-/);
    expect(await cli("key", "list", "--account", "acme")).toMatchObject([{ id: key.id, name: "ci" }]);
    expect(await cli("budget", "set", "--account", "acme", "--daily", "5")).toMatchObject({
      budgets: [{ period: "day", limit: "5" }],
    });
    expect(await cli("budget", "caps", "--account", "acme", "--monthly", "100")).toMatchObject({
      caps: { monthly: "100" },
    });
    expect(await cli("budget", "show", "--account", "acme", "--key", key.id)).toMatchObject({ key: key.id });
    expect(
      await cli(
        "contract",
        "set",
        "--account",
        "acme",
        "--model",
        "json-chat-2025-01-01",
        "--input",
        "0.5",
        "--output",
        "1",
      ),
    ).toMatchObject({ input: "0.5", output: "1" });
    expect(await cli("usage", "list", "--account", "acme")).toEqual([]);
    expect(
      await cli(
        "user",
        "create",
        "--email",
        "ops@acme.test",
        "--password",
        "a long enough pass phrase",
        "--account",
        "acme",
      ),
    ).toMatchObject({ email: "ops@acme.test", role: "owner" });
    expect(await cli("alerts", "show", "--account", "acme")).toMatchObject({ percents: [50, 80, 100] });
    expect(await cli("alerts", "set", "--account", "acme", "--percents", "90", "--balance-below", "1")).toMatchObject({
      percents: [90],
      balanceBelow: "1",
    });
    expect(await cli("alerts", "events", "--account", "acme")).toEqual([]);
    const hook = (await cli("webhook", "add", "--account", "acme", "--url", hookUrl)) as { id: string };
    expect(await cli("webhook", "test", hook.id, "--account", "acme")).toMatchObject({ status: "delivered" });
    expect(await cli("webhook", "deliveries", "--account", "acme")).toMatchObject([{ webhookId: hook.id }]);
    expect(await cli("webhook", "remove", hook.id, "--account", "acme")).toEqual({ id: hook.id, removed: true });
    expect(await cli("key", "revoke", key.id)).toEqual({ id: key.id, status: "revoked" });
    expect(await cli("upstream", "key", "disable", "--upstream", "json-up", "--key", "k1")).toMatchObject({
      upstream: "json-up",
      id: "k1",
      enabled: false,
      reason: "operator",
    });
    expect(await cli("upstream", "key", "enable", "--upstream", "json-up", "--key", "k1")).toMatchObject({
      id: "k1",
      enabled: true,
      reason: null,
    });
    expect([...ran].sort()).toEqual(documentedCommands().sort());
  }, 300_000);

  it("refuses a page larger than the service's, as GraphQL does, instead of cutting it", async () => {
    const usage = await admin(env, "usage", "list", "--account", "acme", "--limit", "201");
    expect(usage.code).toBe(2);
    expect(usage.stdout).toBe("");
    expect(usage.stderr).toContain("--limit: must be 1..200");
    const events = await admin(env, "alerts", "events", "--account", "acme", "--limit", "501");
    expect(events.code).toBe(2);
    expect(events.stderr).toContain("--limit: must be 1..500");
  }, 60_000);

  it("answers a service's rule as a usage error naming the option", async () => {
    const r = await admin(env, "account", "topup", "--account", "acme", "--amount", "0");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--amount: a top-up must be positive");
  }, 60_000);

  it("keeps stdout to the JSON through `npm run -s admin`, build step included", async () => {
    const { code, stdout, stderr } = await run(
      "npm",
      ["run", "-s", "admin", "--", "account", "show", "--account", "acme", "--json"],
      { ...env, TURBO_TELEMETRY_DISABLED: "1" },
    );
    // Turbo's banner and summary go to stderr, also when the build fails.
    expect(stdout).not.toMatch(/turbo|Tasks:|Packages in scope/);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ name: "acme", balance: "15" });
  }, 300_000);
});
