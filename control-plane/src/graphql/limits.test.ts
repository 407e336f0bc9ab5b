import { costLimitRule } from "@escape.tech/graphql-armor-cost-limit";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { buildSchema, type GraphQLError, parse, specifiedRules, validate, type ValidationContext } from "graphql";
import { describe, expect, it } from "vitest";
import { databaseCostRule, graphqlLimitsFrom } from "./limits.ts";

const schema = buildSchema(`
  enum Granularity { HOUR DAY }
  type Stats { requests: Int! }
  type Wallet { spentToday: String!, spentThisMonth: String! }
  type UsagePage { nodes: [Row!]! }
  type Row { id: ID!, model: String! }
  type Query {
    wallet: Wallet!
    usageStats(granularity: Granularity): Stats!
    usage(first: Int): UsagePage!
    n: Int
  }
`);
const limits = { maxDatabaseCost: 100, defaultPage: 200 };
const codes = (q: string) => validate(schema, parse(q), [databaseCostRule(limits)]).map((e) => e.extensions.code);

/** `query { ...F0 }` with each F(i) spreading F(i+1) twice: 2^n fields once fragments are expanded. */
const fanOut = (n: number) =>
  `query { ...F0 } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Query { ${i === n - 1 ? "n" : `...F${i + 1} ...F${i + 1}`} }`).join(" ")}`;

describe("database cost", () => {
  it("prices the fields that hit the database, with aliases and pages multiplying them", () => {
    expect(codes("{ wallet { spentToday spentThisMonth } }")).toEqual([]);
    const wallets = (k: number) =>
      `{ ${Array.from({ length: k }, (_, i) => `w${i}: wallet { spentToday spentThisMonth }`).join(" ")} }`;
    expect(codes(wallets(8))).toEqual([]); // 8 × 12
    expect(codes(wallets(9))).toEqual(["QUERY_TOO_COMPLEX"]);
    expect(
      codes("{ a: usageStats(granularity: DAY) { requests } b: usageStats(granularity: DAY) { requests } }"),
    ).toEqual([]);
    expect(
      codes(
        "{ a: usageStats(granularity: HOUR) { requests } b: usageStats(granularity: HOUR) { requests } c: usageStats(granularity: HOUR) { requests } }",
      ),
    ).toEqual(["QUERY_TOO_COMPLEX"]);
  });

  it("counts a page size given as a variable as the default page", () => {
    expect(codes("{ usage(first: 20) { nodes { id } } }")).toEqual([]);
    const pages = (k: number) =>
      `query($n: Int) { ${Array.from({ length: k }, (_, i) => `p${i}: usage(first: $n) { nodes { id } }`).join(" ")} }`;
    expect(codes(pages(8))).toEqual([]); // 8 × (2 + 200 / 20)
    expect(codes(pages(9))).toEqual(["QUERY_TOO_COMPLEX"]);
  });

  it("prices fragments by what they expand to", () => {
    const doc = `{ ...A ...A } fragment A on Query { x: usageStats(granularity: HOUR) { requests } y: usageStats(granularity: HOUR) { requests } }`;
    expect(codes(doc)).toEqual(["QUERY_TOO_COMPLEX"]); // 4 × 40
  });
});

describe("every limit stays linear in the document, fragments included", () => {
  // Without memoised fragments these documents expand to 2^n fields: n = 150 would never finish (n = 22 stalled
  // the process 8 s before). Each rule (graphql's own, graphql-armor's and the database price) must walk each
  // fragment once. 150 fragments are about 1,500 tokens, within the default token limit.
  it("validates a 2^150 fragment fan-out at once", () => {
    const doc = parse(fanOut(150));
    const report = {
      propagateOnRejection: false,
      onReject: [(ctx: ValidationContext | null, e: GraphQLError) => ctx?.reportError(e)],
    };
    const rules = [
      ...specifiedRules,
      databaseCostRule(limits),
      costLimitRule({ maxCost: 5_000, ...report }),
      maxDepthRule({ n: 10, flattenFragments: true, ...report }),
      maxAliasesRule({ n: 15, ...report }),
    ];
    const t0 = performance.now();
    const errors = validate(schema, doc, rules);
    const ms = performance.now() - t0;
    expect(errors.map((e) => e.message).join("\n")).toMatch(/Cost limit of 5000 exceeded/); // refused, not expanded
    expect(ms).toBeLessThan(5_000); // 2^10000 steps would not finish at all
  });

  it("the database price of the fan-out is computed, not expanded", () => {
    // one `n` per leaf costs nothing; what matters is that it returns
    expect(codes(fanOut(150))).toEqual([]);
  });
});

describe("settings", () => {
  it("introspection is off outside development unless turned on", () => {
    expect(graphqlLimitsFrom({}, false).introspection).toBe(false);
    expect(graphqlLimitsFrom({}, true).introspection).toBe(true);
    expect(graphqlLimitsFrom({ MODELGATE_GRAPHQL_INTROSPECTION: "1" }, false).introspection).toBe(true);
    expect(graphqlLimitsFrom({ MODELGATE_GRAPHQL_INTROSPECTION: "0" }, true).introspection).toBe(false);
    expect(graphqlLimitsFrom({ MODELGATE_GRAPHQL_MAX_ALIASES: "3" }, false).maxAliases).toBe(3);
  });
});
