import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotStore } from "@modelgate/data-plane";
import { openDatabase, type Database } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { InProcessPolicyBus } from "./memory-bus.ts";
import { SnapshotPublisher } from "./publisher.ts";

// Embedded mode as it runs: the publisher on PGlite (one connection) feeding the in-process store. The Postgres
// cases (compaction served throughout, a failed publication) are in feed.services.test.ts.

let dir: string;
let db: Database;
let accountId: string;

const sql = <T = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  db.sql.transaction((tx) => tx.query<T>(text, params));
async function newKey(name: string): Promise<string> {
  const hash = createHash("sha256")
    .update(`${name}-${randomBytes(4).toString("hex")}`)
    .digest("hex");
  await sql(
    `INSERT INTO api_keys (id, account_id, name, key_hash, prefix, allowed_models, ip_allowlist, updated_at) VALUES (gen_random_uuid(), $1, $2, $3, 'sk', '{}', '{}', now())`,
    [accountId, name, hash],
  );
  return hash;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-memory-bus-"));
  db = await openDatabase({ dataDir: dir });
  await migrate(db.sql);
  // A budgeted account: a full publication asks for its budgets while it reads (the query PGlite's one
  // connection would hold until the read's transaction ended).
  const [row] = await sql<{ id: string }>(
    `INSERT INTO accounts (id, name, balance_micro, budget_day_micro, updated_at) VALUES (gen_random_uuid(), 'acme', 1000, 500, now()) RETURNING id::text`,
  );
  accountId = row!.id;
}, 60_000);

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("embedded policy feed on PGlite", () => {
  it("publishes a budgeted account in full, and compacts the store's remembered deletions past the threshold into a new in-process epoch", async () => {
    const store = new SnapshotStore();
    const bus = new InProcessPolicyBus(store);
    const cp = new SnapshotPublisher(
      db,
      bus,
      1,
      (err) => {
        throw err;
      },
      { compactTombstones: 2, compactShare: 0 },
    );
    await cp.start();
    expect(store.account(accountId)?.budgets).toBeDefined();
    const first = (await bus.head())!;
    expect(first).toMatchObject({ tombstones: 0, entities: 1 });
    const doomed = [await newKey("a"), await newKey("b"), await newKey("c")];
    const live = await newKey("live");
    cp.changed();
    await cp.flush();
    await sql(`DELETE FROM api_keys WHERE key_hash = ANY($1)`, [doomed.slice(0, 2)]);
    cp.changed();
    await cp.flush();
    expect(cp.compactions).toBe(0);
    expect(store.deletions).toBe(2);
    await sql(`DELETE FROM api_keys WHERE key_hash = $1`, [doomed[2]]);
    cp.changed();
    await cp.flush();
    expect(cp.compactions).toBe(1);
    await cp.republishing;
    await cp.flush();
    const after = (await bus.head())!;
    expect(after).toMatchObject({ tombstones: 0, entities: 2 });
    expect(after.epoch).not.toBe(first.epoch);
    expect(store.fullLoads).toBe(2);
    expect(store.deletions).toBe(0);
    for (const hash of doomed) expect(store.key(hash)).toBeUndefined();
    expect(store.key(live)?.status).toBe("active");
    expect(store.account(accountId)?.budgets).toBeDefined();
    cp.stop();
  });
});
