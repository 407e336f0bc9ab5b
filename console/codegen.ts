import type { CodegenConfig } from "@graphql-codegen/cli";

// The console's GraphQL types are generated, never written by hand: the result and variable types of every
// document in src/graphql/*.ts, checked against the printed schema (control-plane/schema.graphql, which CI keeps
// in step with the server). `npm run codegen -w console` writes src/graphql/generated/ (committed; the build
// regenerates it and CI fails when the committed copy differs). A page that reads a field its query does not
// select, or a query that selects a field the schema does not have, then fails `npm run typecheck`.
const config: CodegenConfig = {
  schema: "../control-plane/schema.graphql",
  documents: ["src/graphql/*.ts"],
  ignoreNoDocuments: false,
  generates: {
    "src/graphql/generated/": {
      preset: "client",
      // Components receive whole objects (an API key, a usage entry) as props: no masking, the fragment's type
      // is the data itself.
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        enumType: "string-literal",
        strictScalars: true,
        // How the server serialises its scalars: IDs and DateTime (ISO 8601) as text, Long (token counts) as a
        // number. The console sends IDs as it received them, so an ID variable is text too.
        scalars: { ID: "string", DateTime: "string", Long: "number" },
      },
    },
  },
};

export default config;
