import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildSchema, type DocumentNode, Kind, NoUnusedFragmentsRule, specifiedRules, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/processes.ts";

// Every GraphQL document the console sends is valid against the schema the control plane serves (the printed
// control-plane/schema.graphql, which CI checks against the code): a renamed field, a dropped argument or a
// wrong variable type fails here, not in a customer's browser. The documents come from the generated map
// (console/src/graphql/generated, graphql-codegen): a document edited without regenerating is not in it, and
// `graphql()` hands back an empty object, which fails here too.

const schema = buildSchema(readFileSync(join(repoRoot, "control-plane/schema.graphql"), "utf8"));
const dir = join(repoRoot, "console/src/graphql");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));

const isDocument = (v: unknown): v is DocumentNode =>
  typeof v === "object" && v !== null && (v as DocumentNode).kind === Kind.DOCUMENT;
// A fragment on its own is used by the operations that spread it (and validated with them there).
const fragmentRules = specifiedRules.filter((r) => r !== NoUnusedFragmentsRule);

describe("the console's GraphQL documents", () => {
  it("are found", () => {
    expect(files.length).toBeGreaterThan(3);
  });
  for (const file of files) {
    it(`${file}: every document is generated and validates against the schema`, async () => {
      const mod = (await import(join(dir, file))) as Record<string, unknown>;
      const objects = Object.entries(mod).filter(([, v]) => typeof v === "object" && !(v instanceof Set));
      const notGenerated = objects.filter(([, v]) => !isDocument(v)).map(([name]) => name);
      expect(notGenerated, `${file}: not in the generated map (npm run generate -w console)`).toEqual([]);
      const docs = objects as [string, DocumentNode][];
      expect(docs.length, `${file} exports no document`).toBeGreaterThan(0);
      for (const [name, doc] of docs) {
        const onlyFragments = doc.definitions.every((d) => d.kind === Kind.FRAGMENT_DEFINITION);
        const errors = validate(schema, doc, onlyFragments ? fragmentRules : undefined).map((e) => e.message);
        expect(errors, `${file}: ${name}`).toEqual([]);
      }
    });
  }
});
