import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { usagePage, type UsageFilter } from "../../control-plane/src/stats/usage-log.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// The usage log's pages are read from the newest days back in widening windows (1, 7, 31 days, the rest) so a
// query plans only the partitions it needs: every row must still come exactly once, newest first, whatever the
// page size, the filter's edges and the gaps between rows' days (rows in the future, years back, in the default
// partition).

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext;
let accountId: string;
const now = Date.now();
// ages of the rows (ms before now; negative: in the future), several sharing a time
const ages = [-HOUR, 0, 0, HOUR / 2, 23 * HOUR, 25 * HOUR, 2 * DAY, 6.9 * DAY, 7.1 * DAY, 10 * DAY, 30 * DAY, 32 * DAY];
ages.push(40 * DAY, 400 * DAY, 401 * DAY, 800 * DAY);

beforeAll(async () => {
  db = await freshDatabase("pages");
  ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32) };
  accountId = (await db.db.prisma.account.create({ data: { name: "acme" } })).id;
  const other = (await db.db.prisma.account.create({ data: { name: "other" } })).id;
  for (const [i, age] of ages.entries())
    for (const acct of [accountId, other])
      await db.db.sql.transaction((tx) =>
        tx.query(
          `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, status, latency_ms, started_at)
           VALUES (gen_random_uuid(), $1, $2, 'm', 'openai', 200, 1, $3)`,
          [`r${i}-${acct}`, acct, new Date(now - age).toISOString()],
        ),
      );
});
afterAll(async () => db?.drop());

async function walk(first: number, filter: UsageFilter = {}) {
  const seen: { at: number; id: string }[] = [];
  let after: string | null = null;
  for (let page = 0; page < 100; page++) {
    const r = await usagePage(ctx, accountId, filter, first, after);
    seen.push(...r.nodes.map((n) => ({ at: n.startedAt.getTime(), id: n.id })));
    expect(r.nodes.length).toBe(r.hasNextPage ? first : r.nodes.length);
    if (!r.hasNextPage) break;
    after = r.endCursor;
  }
  return seen;
}

describe("usage log pages over day partitions", () => {
  for (const first of [1, 2, 3, 5, 50])
    it(`returns every row once, newest first, ${first} a page`, async () => {
      const seen = await walk(first);
      expect(seen.map((s) => s.at)).toEqual(ages.map((a) => now - a).sort((x, y) => y - x));
      expect(new Set(seen.map((s) => s.id)).size).toBe(ages.length);
      for (let i = 1; i < seen.length; i++) {
        const [a, b] = [seen[i - 1]!, seen[i]!];
        expect(a.at > b.at || (a.at === b.at && a.id > b.id)).toBe(true);
      }
    });

  it("keeps to the filter's edges", async () => {
    const filter = { from: new Date(now - 31 * DAY), to: new Date(now - HOUR / 4) };
    const want = ages
      .map((a) => now - a)
      .filter((t) => t >= filter.from.getTime() && t < filter.to.getTime())
      .sort((x, y) => y - x);
    for (const first of [1, 4]) expect((await walk(first, filter)).map((s) => s.at)).toEqual(want);
    const older = { to: new Date(now - 35 * DAY) };
    expect((await walk(2, older)).map((s) => s.at)).toEqual(ages.filter((a) => a > 35 * DAY).map((a) => now - a));
  });
});
