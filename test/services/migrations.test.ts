import { readFileSync } from "node:fs";
import wasm from "@prisma/prisma-schema-wasm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../control-plane/src/db/client.ts";
import { loadMigrations, migrate } from "../../control-plane/src/db/migrate.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// The SQL migrations are written by hand (Prisma's schema engine cannot be downloaded here), so this test is
// what keeps them honest: migrate an empty database, introspect it, and compare with schema.prisma's DMMF.

interface Field {
  name: string;
  dbName?: string;
  kind: string;
  type: string;
  isList: boolean;
  isRequired: boolean;
  nativeType: [string, string[]] | null;
  default?: unknown;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string;
}
interface Model {
  name: string;
  dbName: string | null;
  fields: Field[];
}
interface Dmmf {
  datamodel: {
    models: Model[];
    enums: { name: string; values: { name: string; dbName?: string | null }[] }[];
    indexes: { model: string; type: "id" | "unique" | "normal"; fields: { name: string }[] }[];
  };
}

const dmmf = JSON.parse(
  wasm.get_dmmf(JSON.stringify({ prismaSchema: readFileSync("prisma/schema.prisma", "utf8") })),
) as Dmmf;
const models = dmmf.datamodel.models;
const tableOf = (m: Model) => m.dbName ?? m.name;
const columnOf = (f: Field) => f.dbName ?? f.name;
const modelByName = new Map(models.map((m) => [m.name, m]));
// The DMMF does not carry an index's predicate: the partial indexes are read from the schema's text,
// "Model(field,field)" for each @@index([…], …, where: raw(…)).
const partialIndexes = new Set(
  [...readFileSync("prisma/schema.prisma", "utf8").matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)].flatMap(
    ([, model, body]) =>
      [...body!.matchAll(/@@index\(\[([^\]]*)\][^\n]*\bwhere:/g)].map(
        ([, fields]) => `${model}(${fields!.replace(/\s/g, "")})`,
      ),
  ),
);

function expectedType(f: Field): string {
  if (f.kind === "enum") return f.isList ? `_${f.type}` : f.type;
  const base =
    f.nativeType?.[0] === "Uuid"
      ? "uuid"
      : (
          {
            String: "text",
            Int: "int4",
            BigInt: "int8",
            Boolean: "bool",
            DateTime: "timestamptz",
            Json: "jsonb",
            Float: "float8",
            Decimal: "numeric",
          } as Record<string, string>
        )[f.type];
  if (!base) throw new Error(`no mapping for ${f.type}`);
  return f.isList ? `_${base}` : base;
}
const clientSideDefault = (f: Field) =>
  typeof f.default === "object" &&
  f.default !== null &&
  ["uuid", "cuid", "nanoid"].includes((f.default as { name: string }).name);

// A partitioned table's partitions (usage_logs' days and its default) are tables of their own to Postgres, with
// the parent's columns and indexes: the comparison is with the parents, and the partitioning has a test of its own.
const NOT_A_PARTITION = `NOT EXISTS (SELECT 1 FROM pg_class pc JOIN pg_namespace pn ON pn.oid = pc.relnamespace
  WHERE pn.nspname = 'public' AND pc.relname = %s AND pc.relispartition)`;
const notAPartition = (column: string) => NOT_A_PARTITION.replace("%s", column);

let db: Awaited<ReturnType<typeof freshDatabase>>;
const q = <T>(sql: string, params: unknown[] = []) => db.db.sql.transaction((tx) => tx.query<T>(sql, params));

beforeAll(async () => {
  db = await freshDatabase("migr");
});
afterAll(async () => db?.drop());

describe("migrations agree with schema.prisma", () => {
  it("has exactly the tables of the models (and the runner's own)", async () => {
    const rows = await q<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND ${notAPartition("table_name")}`,
    );
    expect(rows.map((r) => r.table_name).sort()).toEqual([...models.map(tableOf), "_modelgate_migrations"].sort());
  });

  it("has every column with its type, nullability and default, and no other", async () => {
    const cols = await q<{
      table_name: string;
      column_name: string;
      udt_name: string;
      is_nullable: string;
      column_default: string | null;
      datetime_precision: number | null;
    }>(
      `SELECT table_name, column_name, udt_name, is_nullable, column_default, datetime_precision FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_modelgate_migrations' AND ${notAPartition("table_name")}`,
    );
    const actual = cols
      .map((c) => ({
        column: `${c.table_name}.${c.column_name}`,
        type: c.udt_name,
        nullable: c.is_nullable === "YES",
        hasDefault: c.column_default !== null,
        precision: c.udt_name === "timestamptz" ? c.datetime_precision : null,
      }))
      .sort((a, b) => a.column.localeCompare(b.column));
    const expected = models
      .flatMap((m) =>
        m.fields
          .filter((f) => f.kind === "scalar" || f.kind === "enum")
          .map((f) => ({
            column: `${tableOf(m)}.${columnOf(f)}`,
            type: expectedType(f),
            nullable: f.isList || !f.isRequired,
            hasDefault: f.default !== undefined && !clientSideDefault(f),
            precision: expectedType(f) === "timestamptz" ? Number(f.nativeType?.[1]?.[0] ?? 3) : null,
          })),
      )
      .sort((a, b) => a.column.localeCompare(b.column));
    expect(actual).toEqual(expected);
  });

  it("has the enums with their values", async () => {
    const rows = await q<{ typname: string; labels: string[] }>(
      `SELECT t.typname, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.typname, r.labels]))).toEqual(
      Object.fromEntries(dmmf.datamodel.enums.map((e) => [e.name, e.values.map((v) => v.dbName ?? v.name)])),
    );
  });

  it("has the primary keys, unique constraints and indexes", async () => {
    const rows = await q<{ tablename: string; indexdef: string }>(
      `SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> '_modelgate_migrations' AND ${notAPartition("tablename")}`,
    );
    const actual = rows
      .map((r) => {
        // a partial index ends with its predicate: "… (cols) WHERE (…)"
        const [, colList, where] = /\(([^()]*)\)(?: WHERE (.*))?$/.exec(r.indexdef)!;
        const cols = colList!.split(", ").map((c) => c.replace(/"/g, ""));
        return `${r.tablename}(${cols.join(",")})${/UNIQUE/.test(r.indexdef) ? " unique" : ""}${where ? " partial" : ""}`;
      })
      .sort();
    const expected = dmmf.datamodel.indexes
      .map((i) => {
        const m = modelByName.get(i.model)!;
        const cols = i.fields.map((f) => columnOf(m.fields.find((x) => x.name === f.name)!));
        const partial = partialIndexes.has(`${i.model}(${i.fields.map((f) => f.name).join(",")})`);
        return `${tableOf(m)}(${cols.join(",")})${i.type === "normal" ? "" : " unique"}${partial ? " partial" : ""}`;
      })
      .sort();
    expect(actual).toEqual(expected);
  });

  it("has the foreign keys with their delete rules", async () => {
    const rows = await q<{ tbl: string; cols: string[]; ref: string; del: string }>(
      `SELECT c.conrelid::regclass::text AS tbl, array_agg(a.attname::text ORDER BY a.attnum) AS cols, c.confrelid::regclass::text AS ref, c.confdeltype AS del
       FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
       WHERE c.contype = 'f' GROUP BY c.oid, c.conrelid, c.confrelid, c.confdeltype`,
    );
    const rule: Record<string, string> = { c: "Cascade", n: "SetNull", r: "Restrict", a: "NoAction" };
    const actual = rows
      .map((r) => `${r.tbl.replace(/"/g, "")}(${r.cols.join(",")}) -> ${r.ref.replace(/"/g, "")} ${rule[r.del]}`)
      .sort();
    const expected = models
      .flatMap((m) =>
        m.fields
          .filter((f) => f.kind === "object" && f.relationFromFields?.length)
          .map((f) => {
            const cols = f.relationFromFields!.map((n) => columnOf(m.fields.find((x) => x.name === n)!));
            return `${tableOf(m)}(${cols.join(",")}) -> ${tableOf(modelByName.get(f.type)!)} ${f.relationOnDelete ?? "Restrict"}`;
          }),
      )
      .sort();
    expect(actual).toEqual(expected);
  });
});

describe("the usage log's partitions", () => {
  it("partitions usage_logs by range of started_at, with a default partition and days ahead", async () => {
    const [part] = await q<{ strategy: string; key: string }>(
      `SELECT p.partstrat AS strategy, pg_get_partkeydef(p.partrelid) AS key FROM pg_partitioned_table p
       WHERE p.partrelid = 'usage_logs'::regclass`,
    );
    expect(part).toEqual({ strategy: "r", key: "RANGE (started_at)" });
    const children = await q<{ name: string; bound: string }>(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage_logs'::regclass`,
    );
    expect(children.find((c) => c.name === "usage_logs_default")?.bound).toBe("DEFAULT");
    // the migration creates today's partition (UTC) and three days ahead
    const day = (offset: number) =>
      new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10).replace(/-/g, "");
    const names = children.map((c) => c.name);
    for (const offset of [0, 1, 2, 3]) expect(names).toContain(`usage_logs_p${day(offset)}`);
  });
});

describe("migration runner", () => {
  it("applies each migration once, even when several processes start together", async () => {
    const dbs = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl: db.url })));
    try {
      const results = await Promise.all(dbs.map((d) => migrate(d.sql)));
      expect(results.flat()).toEqual([]); // all applied already by freshDatabase
      const rows = await q<{ name: string }>(`SELECT name FROM "_modelgate_migrations" ORDER BY name COLLATE "C"`);
      expect(rows.map((r) => r.name)).toEqual(loadMigrations().map((m) => m.name));
    } finally {
      await Promise.all(dbs.map((d) => d.close()));
    }
  });

  it("refuses a migration whose file changed after it was applied, and rolls back a failing one", async () => {
    const [first] = loadMigrations();
    await expect(migrate(db.db.sql, [{ ...first!, checksum: "different" }])).rejects.toThrow(
      /changed after it was applied/,
    );
    await expect(
      migrate(db.db.sql, [
        first!,
        {
          name: "29990101000000_broken",
          sql: `CREATE TABLE "half" (id int); SELECT no_such_function();`,
          checksum: "x",
        },
      ]),
    ).rejects.toThrow();
    const tables = await q<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'half'`,
    );
    expect(tables[0]!.n).toBe(0);
  });
});
