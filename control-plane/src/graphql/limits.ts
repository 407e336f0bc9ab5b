import { costLimitPlugin } from "@escape.tech/graphql-armor-cost-limit";
import { maxAliasesPlugin } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthPlugin } from "@escape.tech/graphql-armor-max-depth";
import { maxDirectivesPlugin } from "@escape.tech/graphql-armor-max-directives";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { blockFieldSuggestionsPlugin } from "@escape.tech/graphql-armor-block-field-suggestions";
import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from "graphql";
import type { Plugin } from "graphql-yoga";

// What one GraphQL document may ask for, checked before any resolver runs, so that no single request, signed
// in or not, can stall the process. The general limits come from graphql-armor (maintained, and linear in the
// document: each walks a fragment once and reuses its count): tokens (checked while parsing), depth, aliases,
// directives and cost. On top of them, the fields that hit the database are priced by what they cost
// (`databaseCostRule`), which no general-purpose cost rule can know. Introspection is off outside
// development unless MODELGATE_GRAPHQL_INTROSPECTION=1.

export interface GraphqlLimits {
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  /** graphql-armor's cost: 2 per object, 1 per scalar, ×1.5 per level, × `first` */
  maxCost: number;
  /** the database work one document may cause (see FIELD_COSTS) */
  maxDatabaseCost: number;
  /** page size assumed for `first`/`last` given as a variable or left out on a paginated field */
  defaultPage: number;
  introspection: boolean;
}

const int = (v: string | undefined, d: number) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : d);

export function graphqlLimitsFrom(env: NodeJS.ProcessEnv, dev: boolean): GraphqlLimits {
  return {
    maxTokens: int(env.MODELGATE_GRAPHQL_MAX_TOKENS, 2_000),
    maxDepth: int(env.MODELGATE_GRAPHQL_MAX_DEPTH, 10),
    maxAliases: int(env.MODELGATE_GRAPHQL_MAX_ALIASES, 15),
    maxDirectives: int(env.MODELGATE_GRAPHQL_MAX_DIRECTIVES, 20),
    maxCost: int(env.MODELGATE_GRAPHQL_MAX_COST, 20_000),
    maxDatabaseCost: int(env.MODELGATE_GRAPHQL_MAX_DB_COST, 300),
    defaultPage: 200,
    introspection:
      env.MODELGATE_GRAPHQL_INTROSPECTION === undefined ? dev : env.MODELGATE_GRAPHQL_INTROSPECTION === "1",
  };
}

/**
 * What a field costs the database, in units of about one indexed query. A list field's page size (`first`)
 * multiplies what is selected below it. Fields not named here cost nothing beyond armor's general cost.
 */
const FIELD_COSTS: Record<string, (args: ArgReader) => number> = {
  // aggregates over the usage log (an hourly rollup plus the partial hours at the edges)
  usageStats: (a) => (a.enumValue("granularity") === "HOUR" ? 40 : 15),
  spentToday: () => 5,
  spentThisMonth: () => 5,
  keys: () => 5,
  // pages
  usage: (a) => 2 + Math.ceil(a.page() / 20),
  ledger: (a) => 2 + Math.ceil(a.page() / 20),
  accounts: (a) => 2 + Math.ceil(a.page() / 20),
  // lists and lookups
  wallet: () => 2,
  account: () => 1,
  apiKeys: () => 3,
  apiKey: () => 1,
  exports: () => 3,
  export: () => 1,
  users: () => 3,
  members: () => 2,
  invitations: () => 2,
  models: () => 3,
  catalogModels: () => 3,
  priceContracts: () => 2,
  upstreams: () => 2,
  personalAccessTokens: () => 2,
};

interface ArgReader {
  enumValue(name: string): string | null;
  /** the page size asked for, the default page when it is a variable or missing */
  page(): number;
}

function argReader(
  args: readonly { name: { value: string }; value: ValueNode }[] | undefined,
  defaultPage: number,
): ArgReader {
  const find = (name: string) => args?.find((a) => a.name.value === name)?.value;
  return {
    enumValue: (name) => {
      const v = find(name);
      return v?.kind === Kind.ENUM ? v.value : null;
    },
    page: () => {
      const v = find("first") ?? find("last");
      return v?.kind === Kind.INT ? Math.max(1, Math.min(Number(v.value), 10_000)) : defaultPage;
    },
  };
}

/** Database cost of a selection set; each fragment is priced once and reused (linear in the document). */
export function databaseCost(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  defaultPage: number,
  memo = new Map<string, number>(),
): number {
  let cost = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      const price = FIELD_COSTS[sel.name.value];
      const args = argReader(sel.arguments, defaultPage);
      const own = price ? price(args) : 0;
      // a page multiplies the work of what it selects
      const pageArg = sel.arguments?.some((a) => a.name.value === "first" || a.name.value === "last");
      const below = sel.selectionSet ? databaseCost(sel.selectionSet, fragments, defaultPage, memo) : 0;
      cost += own + (pageArg ? args.page() : 1) * below;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      cost += databaseCost(sel.selectionSet, fragments, defaultPage, memo);
    } else {
      const name = sel.name.value;
      const known = memo.get(name);
      if (known !== undefined) {
        cost += known;
        continue;
      }
      const frag = fragments.get(name);
      if (!frag) continue; // unknown fragment: graphql's own rules report it
      memo.set(name, 0); // a cycle counts nothing here; NoFragmentCycles reports it
      const c = databaseCost(frag.selectionSet, fragments, defaultPage, memo);
      memo.set(name, c);
      cost += c;
    }
    if (cost > Number.MAX_SAFE_INTEGER / 2) return cost;
  }
  return cost;
}

export function databaseCostRule(limits: Pick<GraphqlLimits, "maxDatabaseCost" | "defaultPage">) {
  return (context: ValidationContext): ASTVisitor => ({
    Document(doc) {
      const fragments = new Map<string, FragmentDefinitionNode>();
      for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
      const memo = new Map<string, number>();
      for (const d of doc.definitions) {
        if (d.kind !== Kind.OPERATION_DEFINITION) continue;
        const cost = databaseCost(d.selectionSet, fragments, limits.defaultPage, memo);
        if (cost > limits.maxDatabaseCost) {
          context.reportError(
            new GraphQLError(
              `the query would cost the database about ${cost} units; the limit is ${limits.maxDatabaseCost} (ask for fewer or smaller pages)`,
              {
                nodes: [d],
                extensions: { code: "QUERY_TOO_COMPLEX" },
              },
            ),
          );
        }
      }
    },
  });
}

/**
 * Introspection off: `__schema` and `__type` refused (`__typename` stays). By name rather than with graphql's
 * NoSchemaIntrospectionCustomRule, which checks types with `instanceof` and so breaks when the ESM and CJS
 * builds of graphql meet (yoga validates with one, an import here may load the other).
 */
const noIntrospectionRule = (context: ValidationContext): ASTVisitor => ({
  Field(node) {
    if (node.name.value === "__schema" || node.name.value === "__type") {
      context.reportError(
        new GraphQLError(
          "introspection is turned off on this server (MODELGATE_GRAPHQL_INTROSPECTION=1 turns it on); the schema is published as schema.graphql",
          { nodes: [node], extensions: { code: "INTROSPECTION_DISABLED" } },
        ),
      );
    }
  },
});

/** graphql-armor's refusals keep their messages but get this API's stable error codes. */
const reject = (code: string) => (context: ValidationContext | null, error: GraphQLError) => {
  context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, ""), { extensions: { code } }));
};

export function limitPlugins(limits: GraphqlLimits): Plugin[] {
  const opts = (code: string) => ({ propagateOnRejection: false, onReject: [reject(code)] });
  const plugins: Plugin[] = [
    // tokens are counted while parsing: an oversized document is refused before it is even built
    maxTokensPlugin({ n: limits.maxTokens }),
    maxDepthPlugin({
      n: limits.maxDepth,
      ignoreIntrospection: false,
      flattenFragments: true,
      ...opts("QUERY_TOO_DEEP"),
    }),
    maxAliasesPlugin({ n: limits.maxAliases, allowList: [], ...opts("TOO_MANY_ALIASES") }),
    maxDirectivesPlugin({ n: limits.maxDirectives, ...opts("TOO_MANY_DIRECTIVES") }),
    costLimitPlugin({
      maxCost: limits.maxCost,
      ignoreIntrospection: false,
      flattenFragments: true,
      ...opts("QUERY_TOO_COMPLEX"),
    }),
    {
      onValidate({ addValidationRule }) {
        addValidationRule(databaseCostRule(limits));
        if (!limits.introspection) addValidationRule(noIntrospectionRule);
      },
    },
  ];
  // outside development, no "did you mean …" hints that map the schema for someone without introspection
  if (!limits.introspection) plugins.push(blockFieldSuggestionsPlugin());
  return plugins;
}
