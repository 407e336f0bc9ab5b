import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import type * as GraphQL from "graphql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../db/client.ts";
import { migrate } from "../../db/migrate.ts";
import { createAccount } from "../../services/accounts.ts";
import type { GqlContext } from "../context.ts";
import { schema } from "./index.ts";

// The graphql module the schema was built with (Node loads it for @pothos/core), not a second copy through Vite.
const { execute, parse } = createRequire(import.meta.url)("graphql") as typeof GraphQL;

// Account.members goes through Pothos' Prisma plugin: listing many accounts with their members costs a fixed
// number of database queries, not one per account. Counted with a Prisma query extension on a real PGlite.

let dir: string;
let db: Database;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-members-"));
  db = await openDatabase({ dataDir: dir });
  await migrate(db.sql);
}, 60_000);

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("loads the members of 12 accounts in a fixed number of queries", async () => {
  const ctxBase = { prisma: db.prisma, snapshotChanged: () => {}, masterKey: Buffer.alloc(32, 1) };
  for (let i = 0; i < 12; i++) {
    const a = await createAccount(ctxBase, { name: `acct-${String(i).padStart(2, "0")}` });
    await db.prisma.user.create({ data: { email: `owner${i}@example.com`, role: "owner", accountId: a.id } });
    await db.prisma.user.create({ data: { email: `member${i}@example.com`, role: "member", accountId: a.id } });
  }
  const operator = await db.prisma.user.create({ data: { email: "ops@example.com", role: "operator" } });

  let queries = 0;
  const counted = db.prisma.$extends({
    query: {
      $allOperations: async ({ args, query }) => {
        queries++;
        return query(args);
      },
    },
  });
  const context = {
    app: { ...ctxBase, prisma: counted, mail: null, dataDir: dir, secureCookies: false, dev: true },
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

  const result = await execute({
    schema,
    document: parse(`{ accounts(first: 50) { total nodes { name members { email role } } } }`),
    contextValue: context,
  });
  expect(result.errors).toBeUndefined();
  const nodes = (result.data as { accounts: { nodes: { name: string; members: { email: string; role: string }[] }[] } })
    .accounts.nodes;
  expect(nodes).toHaveLength(12);
  expect(nodes[3]).toEqual({
    name: "acct-03",
    members: [
      { email: "owner3@example.com", role: "owner" },
      { email: "member3@example.com", role: "member" },
    ],
  });
  // the list, the count, and the members of all twelve accounts (batched): not 2 + 12
  expect(queries).toBeLessThanOrEqual(4);
});
