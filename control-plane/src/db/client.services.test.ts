import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { adminUrl, freshDatabase } from "../../../test/helpers/postgres.ts";

// Postgres ending an idle pooled connection (a restart, a failover, an administrator's terminate) must not be
// an uncaught exception: the pool reports it, the process stays up, and the next query opens a new one.

const db = await freshDatabase("pool");
afterAll(() => db.drop());

it("survives Postgres terminating its idle connections and queries again", async () => {
  expect(await db.db.prisma.$queryRawUnsafe<{ one: number }[]>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => void uncaught.push(err);
  process.prependListener("uncaughtException", onUncaught);
  const warned = new Promise<string>((resolve) => process.once("warning", (w) => resolve(w.message)));
  try {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    const { rows } = await admin.query(
      "SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [db.name],
    );
    await admin.end();
    expect(rows.length).toBeGreaterThan(0);
    const noWarning = new Promise<string>((resolve) =>
      setTimeout(() => resolve("no warning within 5 s"), 5_000).unref(),
    );
    expect(await Promise.race([warned, noWarning])).toMatch(/idle connection ended/);
    expect(await db.db.prisma.$queryRawUnsafe<{ one: number }[]>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  } finally {
    process.removeListener("uncaughtException", onUncaught);
  }
  expect(uncaught).toEqual([]);
});
