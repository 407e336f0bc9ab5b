import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildSchema, type DocumentNode, Kind, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/processes.ts";

// Every GraphQL document the console sends is valid against the schema the control plane serves (the printed
// control-plane/schema.graphql, which CI checks against the code): a renamed field, a dropped argument or a
// wrong variable type fails here, not in a customer's browser.

const schema = buildSchema(readFileSync(join(repoRoot, "control-plane/schema.graphql"), "utf8"));
const dir = join(repoRoot, "console/src/graphql");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts") && f !== "types.ts");

const isDocument = (v: unknown): v is DocumentNode =>
  typeof v === "object" && v !== null && (v as DocumentNode).kind === Kind.DOCUMENT;

describe("the console's GraphQL documents", () => {
  it("are found", () => {
    expect(files.length).toBeGreaterThan(3);
  });
  for (const file of files) {
    it(`${file}: every document validates against the schema`, async () => {
      const mod = (await import(join(dir, file))) as Record<string, unknown>;
      const docs = Object.entries(mod).filter(([, v]) => isDocument(v)) as [string, DocumentNode][];
      expect(docs.length, `${file} exports no document`).toBeGreaterThan(0);
      for (const [name, doc] of docs) {
        const errors = validate(schema, doc).map((e) => e.message);
        expect(errors, `${file}: ${name}`).toEqual([]);
      }
    });
  }
});
