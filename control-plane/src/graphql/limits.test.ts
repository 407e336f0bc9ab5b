import { buildSchema, parse, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { limitsRule, measure } from "./limits.ts";

const schema = buildSchema(`
  type Node { id: ID!, child: Node, children(first: Int): [Node!]! }
  type Query { node: Node, nodes(first: Int): [Node!]! }
`);
const limits = { maxDepth: 4, maxCost: 100, defaultPage: 50 };
const check = (q: string) => validate(schema, parse(q), [limitsRule(limits)]).map((e) => e.extensions.code);

describe("query limits", () => {
  it("measures depth and cost through fragments", () => {
    const doc = parse(`query { nodes(first: 10) { ...F } } fragment F on Node { id child { id } }`);
    const op = doc.definitions[0]!;
    if (op.kind !== "OperationDefinition") throw new Error();
    expect(measure(op.selectionSet, { F: doc.definitions[1] as never }, limits)).toEqual({ depth: 3, cost: 1 + 10 * 3 });
  });
  it("refuses deep queries", () => {
    expect(check("{ node { child { child { id } } } }")).toEqual([]);
    expect(check("{ node { child { child { child { id } } } } }")).toEqual(["QUERY_TOO_DEEP"]);
  });
  it("refuses expensive queries, counting variable page sizes as the default page", () => {
    expect(check("{ nodes(first: 5) { children(first: 5) { id } } }")).toEqual([]);
    expect(check("{ nodes(first: 20) { children(first: 20) { id } } }")).toEqual(["QUERY_TOO_COMPLEX"]);
    expect(check("query($n: Int) { nodes(first: $n) { id child { id } } }")).toEqual(["QUERY_TOO_COMPLEX"]);
  });
  it("does not loop on fragment cycles", () => {
    expect(() => check("{ node { ...A } } fragment A on Node { child { ...A } }")).not.toThrow();
  });
});
