import { readFileSync } from "node:fs";
import { buildSchema, getNamedType, isObjectType } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleUsageBatch } from "../../../control-plane/src/usage/settle.ts";
import { startTwoTenants, type Tenant } from "../../helpers/graphql-tenants.ts";
import { repoRoot } from "../../helpers/processes.ts";
import { usageEvent } from "../../helpers/usage-event.ts";
import { Client, type Harness } from "./harness.ts";

// Tenant isolation of the ledger's settlement lines (LedgerEntry.batchId and .calls: one usage line per account
// per settlement batch). Two customers' calls are settled, one batch holding both accounts' and one only A's;
// A and the operator see A's lines with their real batch ids and call counts, while B (its session, its access
// token, its gateway API key) and an anonymous caller get none of them by any path that exposes a LedgerEntry.

let h: Harness;
let ops: Client;
let a: Tenant;
let b: Tenant;
/** B's personal access token (read and write), and one of B's gateway API keys (sk-mg-…): B's other credentials */
let bToken: Client;
let bApiKey: Client;
/** the batch that settled calls of both accounts, and the one that settled only A's */
let shared: string;
let onlyA: string;

const LINES = `nodes { id kind amountMicro batchId calls } hasNextPage endCursor`;
interface Line {
  id: string;
  kind: string;
  amountMicro: string;
  batchId: string | null;
  calls: number | null;
}

let seq = 0;
const call = (accountId: string, keyId: string, cost: number) => ({
  ...usageEvent(++seq),
  requestId: `ledger-${seq}`,
  accountId,
  keyId,
  cost: String(cost),
  startedAt: new Date().toISOString(),
});

/** The settlement batch of the account's usage rows (each settled in one batch). */
async function batchOf(accountId: string, requestIds: string[]): Promise<string> {
  const rows = await h.app.prisma.usageLog.findMany({
    where: { accountId, requestId: { in: requestIds } },
    select: { batchId: true },
  });
  const batches = [...new Set(rows.map((r) => r.batchId))];
  expect(rows).toHaveLength(requestIds.length);
  expect(batches).toHaveLength(1);
  return batches[0]!;
}

/** The usage lines, fewest calls first (two settlements may share a millisecond: no order is relied on). */
const usageLines = (lines: Line[]) =>
  lines.filter((l) => l.kind === "usage").sort((x, y) => (x.calls ?? 0) - (y.calls ?? 0));

beforeAll(async () => {
  ({ h, ops, a, b } = await startTwoTenants("gql_ledger"));
  bApiKey = new Client(h.url, b.apiKey.key);
  const pat = await b.client.gql(
    `mutation { createPersonalAccessToken(name: "cli", scopes: [read, write]) { token } }`,
  );
  bToken = new Client(h.url, pat.createPersonalAccessToken.token as string);

  // one batch: two calls of A's, one of B's; then a batch of three calls of A's alone
  const first = [call(a.accountId, a.apiKey.id, 1_000), call(a.accountId, a.apiKey.id, 2_000)];
  const firstB = [call(b.accountId, b.apiKey.id, 500)];
  expect(await settleUsageBatch(h.db, [...first, ...firstB])).toBe(3);
  const second = [1, 2, 3].map(() => call(a.accountId, a.apiKey.id, 4_000));
  expect(await settleUsageBatch(h.db, second)).toBe(3);
  shared = await batchOf(
    a.accountId,
    first.map((e) => e.requestId),
  );
  expect(await batchOf(b.accountId, [firstB[0]!.requestId])).toBe(shared);
  onlyA = await batchOf(
    a.accountId,
    second.map((e) => e.requestId),
  );
  expect(onlyA).not.toBe(shared);
});
afterAll(async () => {
  await h?.close();
});

describe("ledger lines across tenants", () => {
  it("the only paths to a LedgerEntry are Query.ledger (through LedgerPage.nodes)", () => {
    // Every field of the printed schema whose type is a LedgerEntry or a page of them: a new path must be added
    // to the tests below (and this list).
    const schema = buildSchema(readFileSync(`${repoRoot}/control-plane/schema.graphql`, "utf8"));
    const paths = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .flatMap((t) =>
        Object.values(t.getFields())
          .filter((f) => ["LedgerEntry", "LedgerPage"].includes(getNamedType(f.type).name))
          .map((f) => `${t.name}.${f.name}`),
      )
      .sort();
    expect(paths).toEqual(["LedgerPage.nodes", "Query.ledger"]);
  });

  it("A sees its own settlement lines with their batch ids and call counts; so does the operator", async () => {
    const mine = (await a.client.gql(`{ ledger { ${LINES} } }`)).ledger.nodes as Line[];
    expect(usageLines(mine).map((l) => [l.batchId, l.calls, l.amountMicro])).toEqual([
      [shared, 2, "-3000"],
      [onlyA, 3, "-12000"],
    ]);
    const seen = (await ops.gql(`query($a: ID) { ledger(accountId: $a) { ${LINES} } }`, { a: a.accountId })).ledger
      .nodes as Line[];
    expect(seen).toEqual(mine);
  });

  it("B's session and B's access token see only B's line of the shared batch, never A's", async () => {
    const aLines = usageLines((await a.client.gql(`{ ledger { ${LINES} } }`)).ledger.nodes as Line[]);
    const aIds = aLines.map((l) => l.id);
    const aCursor = (await a.client.gql(`{ ledger(first: 1) { endCursor } }`)).ledger.endCursor as string;
    for (const [who, B] of [
      ["B session", b.client],
      ["B token", bToken],
    ] as const) {
      // its own ledger: its one usage line in the shared batch (calls 1), nothing of the batch only A had
      const own = (await B.gql(`{ ledger { ${LINES} } }`)).ledger.nodes as Line[];
      expect(
        usageLines(own).map((l) => [l.batchId, l.calls, l.amountMicro]),
        who,
      ).toEqual([[shared, 1, "-500"]]);
      expect(JSON.stringify(own), who).not.toContain(onlyA);
      for (const id of aIds) expect(JSON.stringify(own), who).not.toContain(id);
      // A's cursor does not page into A's lines: the page is still B's own (or empty)
      const after = (await B.gql(`query($c: String) { ledger(after: $c) { ${LINES} } }`, { c: aCursor })).ledger
        .nodes as Line[];
      for (const l of after) expect(aIds, who).not.toContain(l.id);
      expect(JSON.stringify(after), who).not.toContain(onlyA);
      // naming A's account (the operator's path to any account's ledger): FORBIDDEN, and no data at all
      for (const q of [
        `query($a: ID) { ledger(accountId: $a) { ${LINES} } }`,
        `query($a: ID) { ledger(accountId: $a, first: 200) { nodes { batchId calls } } }`,
        `query($a: ID) { wallet { balance } ledger(accountId: $a) { nodes { batchId calls } } }`,
      ]) {
        const r = await B.request(q, { a: a.accountId });
        expect(r.errors?.[0]?.extensions?.code, `${who}: ${q}`).toBe("FORBIDDEN");
        expect(r.data ?? null, `${who}: ${q}`).toBeNull();
        const text = JSON.stringify(r);
        expect(text, who).not.toContain(onlyA);
        expect(text, who).not.toContain(shared);
        for (const id of aIds) expect(text, who).not.toContain(id);
      }
    }
  });

  it("B's gateway API key and an anonymous caller get the protocol's UNAUTHENTICATED and no ledger", async () => {
    const aIds = usageLines((await a.client.gql(`{ ledger { ${LINES} } }`)).ledger.nodes as Line[]).map((l) => l.id);
    const anonymous = new Client(h.url);
    for (const [who, c] of [
      ["B's API key", bApiKey],
      ["anonymous", anonymous],
    ] as const) {
      for (const [q, vars] of [
        [`{ ledger { ${LINES} } }`, {}],
        [`query($a: ID) { ledger(accountId: $a) { ${LINES} } }`, { a: a.accountId }],
        [`query($a: ID) { ledger(accountId: $a) { nodes { batchId calls } } }`, { a: b.accountId }],
      ] as const) {
        const r = await c.request(q, vars);
        expect(r.errors?.[0]?.extensions?.code, `${who}: ${q}`).toBe("UNAUTHENTICATED");
        expect(r.data ?? null, `${who}: ${q}`).toBeNull();
        if (who === "B's API key") expect(r.status, q).toBe(401);
        const text = JSON.stringify(r);
        expect(text, who).not.toContain(onlyA);
        expect(text, who).not.toContain(shared);
        for (const id of aIds) expect(text, who).not.toContain(id);
      }
    }
  });
});
