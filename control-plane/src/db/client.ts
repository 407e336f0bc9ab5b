import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { QueryConfig } from "pg";
import { PrismaClient } from "../generated/prisma/client.ts";
import { copyInto } from "./copy-in.ts";
import { copyOutFrom, type CopyOut } from "./copy-out.ts";

export type Db = InstanceType<typeof PrismaClient>;

/** Runs raw SQL for the migration runner; each driver brings its own. */
export interface SqlRunner {
  /** Runs several statements in one transaction (all or nothing). */
  transaction<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
export interface SqlTx {
  exec(sql: string): Promise<void>;
  /**
   * `prepared`: Postgres parses and plans the statement once per connection and reuses the plan (a named
   * prepared statement), for statements run many times with different parameters (settlement's). PGlite runs
   * it like any other.
   */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[], prepared?: boolean): Promise<R[]>;
  /** Postgres only: runs `COPY … FROM STDIN` with `data` (COPY's text format) as its input */
  copyIn?(sql: string, data: string): Promise<void>;
}

export interface Database {
  prisma: Db;
  sql: SqlRunner;
  kind: "postgres" | "pglite";
  /** Postgres only: a COPY … TO STDOUT's bytes as a stream (exports); PGlite has none */
  copyOut?: CopyOut;
  close(): Promise<void>;
}

/** Postgres when a URL is given (distributed mode), else PGlite files under dataDir (embedded mode). */
export async function openDatabase(opts: { databaseUrl?: string; dataDir?: string }): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl);
  return openPglite(opts.dataDir ?? "./data");
}

async function openPostgres(url: string): Promise<Database> {
  const [{ PrismaPg }, pg] = await Promise.all([import("@prisma/adapter-pg"), import("pg")]);
  const pool = new pg.default.Pool({ connectionString: url, max: 10 });
  // An idle connection that Postgres ends (a restart, a failover, an administrator's terminate) is reported
  // on the pool; with no listener that would be an uncaught exception and take the process down. The pool
  // opens a new connection on the next query, so a warning is all it needs.
  pool.on("error", (err) =>
    process.emitWarning(`postgres: an idle connection ended (${err.message}); the next query opens a new one`),
  );
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const sql: SqlRunner = {
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn({
          exec: async (s) => void (await client.query(s)),
          query: async (s, p, prepared) => (await client.query(pgQuery(s, p as unknown[], prepared))).rows,
          copyIn: (s, data) => copyInto(client, s, data),
        });
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: async () => undefined,
  };
  return {
    prisma,
    sql,
    kind: "postgres",
    copyOut: copyOutFrom(pool),
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

// A prepared statement's name, from its text: the same text gets the same name on every connection, and two
// texts never share one (node-postgres refuses a name reused for another text).
const statementNames = new Map<string, string>();

/** node-postgres' query for SqlTx.query: a named (prepared) statement when asked for. */
export function pgQuery(sql: string, params?: unknown[], prepared?: boolean): QueryConfig {
  if (!prepared) return { text: sql, values: params };
  let name = statementNames.get(sql);
  if (name === undefined)
    statementNames.set(sql, (name = `mg_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}`));
  return { name, text: sql, values: params };
}

async function openPglite(dataDir: string): Promise<Database> {
  const [{ PGlite }, { PrismaPGlite }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("pglite-prisma-adapter"),
  ]);
  const dir = `${dataDir}/pglite`;
  mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  const sql: SqlRunner = {
    transaction: (fn) =>
      pglite.transaction((tx) =>
        fn({
          exec: async (s) => void (await tx.exec(s)),
          query: async <R>(s: string, p?: unknown[]) => (await tx.query<R>(s, p as unknown[])).rows,
        }),
      ),
    close: async () => undefined,
  };
  return {
    prisma,
    sql,
    kind: "pglite",
    async close() {
      await prisma.$disconnect();
      await pglite.close();
    },
  };
}
