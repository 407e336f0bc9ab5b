import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase, type Database } from "../../control-plane/src/db/client.ts";
import { migrate } from "../../control-plane/src/db/migrate.ts";

/** The machine's Postgres (trust auth); CI starts it. Override with TEST_PG_URL. */
export const adminUrl = process.env.TEST_PG_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export const urlFor = (name: string) => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

/** A fresh, migrated database per test file, dropped afterwards; tests never share rows. */
export async function freshDatabase(
  label = "t",
): Promise<{ url: string; name: string; db: Database; drop(): Promise<void> }> {
  const name = `mg_${label}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = urlFor(name);
  const db = await openDatabase({ databaseUrl: url });
  await migrate(db.sql);
  return {
    url,
    name,
    db,
    async drop() {
      await db.close();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}
