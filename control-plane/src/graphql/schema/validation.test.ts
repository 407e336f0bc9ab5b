import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as GraphQL from "graphql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../db/client.ts";
import { migrate } from "../../db/migrate.ts";
import { createAccount } from "../../services/accounts.ts";
import type { GqlContext } from "../context.ts";
import { schema } from "./index.ts";

// GraphQL arguments are validated by Pothos' zod plugin with the services' own schemas (services/inputs.ts):
// the answer is BAD_USER_INPUT naming the field, before any resolver runs.

const { execute, parse } = createRequire(import.meta.url)("graphql") as typeof GraphQL;
let dir: string;
let db: Database;
let context: GqlContext;
let accountId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-validation-"));
  db = await openDatabase({ dataDir: dir });
  await migrate(db.sql);
  const app = {
    prisma: db.prisma,
    snapshotChanged: () => {},
    masterKey: Buffer.alloc(32, 1),
    mail: null,
    dataDir: dir,
    secureCookies: false,
    dev: true,
  };
  accountId = (await createAccount(app, { name: "acme" })).id;
  const operator = await db.prisma.user.create({ data: { email: "ops@example.com", role: "operator" } });
  context = {
    app,
    auth: { principal: null, pending: null, error: null, clearCookie: false },
    principal: {
      user: { ...operator, account: null },
      via: "session",
      sessionId: null,
      tokenId: null,
      tokenScopes: null,
    },
    setSessionCookie: () => {},
    clientIp: null,
  } as unknown as GqlContext;
}, 60_000);

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

const create = (input: Record<string, unknown>) =>
  execute({
    schema,
    document: parse(
      `mutation($a: ID, $i: ApiKeyRestrictionsInput!) { createApiKey(accountId: $a, input: $i) { apiKey { name rpm ipAllowlist } } }`,
    ),
    variableValues: { a: accountId, i: input },
    contextValue: context,
  });

it("refuses a bad allowlist entry, name or limit with BAD_USER_INPUT and the field", async () => {
  for (const [input, field] of [
    [{ ipAllowlist: ["10.0.0.0/33"] }, "ipAllowlist"],
    [{ ipAllowlist: ["not-an-ip"] }, "ipAllowlist"],
    [{ name: "   " }, "name"],
    [{ rpm: 0 }, "rpm"],
    [{ concurrency: 20_000_000 }, "concurrency"],
  ] as const) {
    const r = await create(input);
    expect(r.errors?.[0]?.extensions, JSON.stringify(input)).toMatchObject({ code: "BAD_USER_INPUT", field });
  }
  expect(await db.prisma.apiKey.count()).toBe(0);
});

it("accepts good values and null (no limit)", async () => {
  const r = await create({ name: "k", ipAllowlist: ["10.0.0.0/8", "::1"], rpm: null });
  expect(r.errors).toBeUndefined();
  expect(r.data).toEqual({
    createApiKey: { apiKey: expect.objectContaining({ name: "k", rpm: null, ipAllowlist: ["10.0.0.0/8", "::1"] }) },
  });
});
