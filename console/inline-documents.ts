import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Plugin } from "vite";

// The client preset's `graphql()` looks each document up in one map (src/graphql/generated/gql.ts) that holds
// every document of the console, keyed by its source text. Whatever imports `graphql()` pulls the whole map in,
// and the sign-in and session documents are imported by the entry, so every page's documents were in the entry
// chunk. This plugin does at build time what the preset's babel plugin does, but in place: each
// `graphql(`…`)` call in src/graphql/*.ts becomes the document codegen generated for it (taken from the
// generated files, so the object is exactly the one the map held). Each src/graphql module then carries only its
// own documents and is bundled with the pages that import it. Types are unchanged: tsc still sees `graphql()`.

const generated = fileURLToPath(new URL("./src/graphql/generated/", import.meta.url));
const graphqlModule = /[\\/]src[\\/]graphql[\\/][^\\/]+\.ts$/;
const call = /graphql\(`([^`]*)`\)/g;
const importLine = /^import \{ graphql \} from "\.\/generated";\n/m;

/** Source text → the generated document's JSON, read from the generated files. */
function loadDocuments(): Map<string, string> {
  const gql = readFileSync(`${generated}gql.ts`, "utf8");
  const types = readFileSync(`${generated}graphql.ts`, "utf8");
  const json = new Map<string, string>();
  for (const m of types.matchAll(/^export const (\w+) = (\{.*\}) as unknown as DocumentNode<.*>;$/gm)) {
    json.set(m[1]!, m[2]!);
  }
  const map = gql.slice(gql.indexOf("const documents"), gql.indexOf("\n};", gql.indexOf("const documents")));
  const bySource = new Map<string, string>();
  for (const m of map.matchAll(/^ {4}("(?:[^"\\]|\\.)*"): types\.(\w+),$/gm)) {
    const doc = json.get(m[2]!);
    if (doc === undefined) throw new Error(`inline-documents: ${m[2]} is in gql.ts but not in graphql.ts`);
    bySource.set(JSON.parse(m[1]!) as string, doc);
  }
  return bySource;
}

export function inlineDocuments(): Plugin {
  let documents: Map<string, string> | undefined;
  return {
    name: "modelgate:inline-documents",
    apply: "build",
    // before the TypeScript transform, on the source as written
    enforce: "pre",
    buildStart() {
      documents = loadDocuments();
    },
    transform(code, id) {
      if (!graphqlModule.test(id) || !importLine.test(code)) return null;
      const out = code.replace(importLine, "").replace(call, (_, source: string) => {
        const doc = documents!.get(source);
        // a document codegen has not seen: the generated files are stale (`npm run generate`)
        if (doc === undefined) this.error(`a graphql() document in ${id} is not in src/graphql/generated`);
        return doc;
      });
      if (/\bgraphql\(/.test(out)) this.error(`${id} calls graphql() in a form this plugin does not inline`);
      return { code: out, map: null };
    },
  };
}
