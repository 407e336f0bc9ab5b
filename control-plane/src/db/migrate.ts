import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SqlRunner } from "./client.ts";

export const migrationsDir = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

/** Prisma's layout: prisma/migrations/<timestamp>_<name>/migration.sql, applied in name order. */
export function loadMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/**
 * Applies pending migrations in one transaction, under an advisory lock so that several processes starting
 * at once (control plane replicas, the admin CLI) apply each migration exactly once. A migration whose file
 * changed after it was applied is an error: the database and the code would disagree silently otherwise.
 */
export async function migrate(sql: SqlRunner, migrations = loadMigrations()): Promise<string[]> {
  return sql.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(4242000001)");
    await tx.exec(`CREATE TABLE IF NOT EXISTS "_modelgate_migrations" (
      "name" TEXT PRIMARY KEY,
      "checksum" TEXT NOT NULL,
      "applied_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
    )`);
    const rows = await tx.query<{ name: string; checksum: string }>(
      `SELECT "name", "checksum" FROM "_modelgate_migrations"`,
    );
    const applied = new Map(rows.map((r) => [r.name, r.checksum]));
    const done: string[] = [];
    for (const m of migrations) {
      const seen = applied.get(m.name);
      if (seen !== undefined) {
        if (seen !== m.checksum) throw new Error(`migration ${m.name} changed after it was applied`);
        continue;
      }
      await tx.exec(m.sql);
      await tx.query(`INSERT INTO "_modelgate_migrations" ("name", "checksum") VALUES ($1, $2)`, [m.name, m.checksum]);
      done.push(m.name);
    }
    return done;
  });
}
