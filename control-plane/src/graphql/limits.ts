import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from "graphql";

// Query limits, checked at validation time (before any resolver runs):
// - depth: nesting of selection sets, through fragments;
// - cost: every field costs 1, and a field with a page-size argument (`first`) multiplies what it selects by that
//   size (an unknown, variable size counts as the maximum page).

export interface Limits {
  maxDepth: number;
  maxCost: number;
  /** size assumed for `first` when given as a variable or omitted on a paginated field */
  defaultPage: number;
}

export const DEFAULT_LIMITS: Limits = { maxDepth: 10, maxCost: 20_000, defaultPage: 200 };

const PAGE_ARGS = new Set(["first", "last", "limit"]);

function pageSize(args: readonly { name: { value: string }; value: ValueNode }[] | undefined, limits: Limits): number | null {
  for (const a of args ?? []) {
    if (!PAGE_ARGS.has(a.name.value)) continue;
    if (a.value.kind === Kind.INT) return Math.max(1, Number(a.value.value));
    return limits.defaultPage;
  }
  return null;
}

export function measure(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  limits: Limits,
  seen: Set<string> = new Set(),
): { depth: number; cost: number } {
  let depth = 0;
  let cost = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      if (sel.name.value.startsWith("__")) continue; // introspection meta fields
      const sub = sel.selectionSet ? measure(sel.selectionSet, fragments, limits, seen) : { depth: 0, cost: 0 };
      const mult = pageSize(sel.arguments, limits) ?? 1;
      depth = Math.max(depth, sub.depth + 1);
      cost += 1 + mult * sub.cost;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      const sub = measure(sel.selectionSet, fragments, limits, seen);
      depth = Math.max(depth, sub.depth);
      cost += sub.cost;
    } else {
      const name = sel.name.value;
      const frag = fragments[name];
      if (!frag || seen.has(name)) continue; // unknown or cyclic: other rules report it
      const sub = measure(frag.selectionSet, fragments, limits, new Set([...seen, name]));
      depth = Math.max(depth, sub.depth);
      cost += sub.cost;
    }
  }
  return { depth, cost };
}

export function limitsRule(limits: Limits = DEFAULT_LIMITS) {
  return (context: ValidationContext): ASTVisitor => ({
    Document(doc) {
      const fragments: Record<string, FragmentDefinitionNode> = {};
      for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
      for (const d of doc.definitions) {
        if (d.kind !== Kind.OPERATION_DEFINITION) continue;
        const { depth, cost } = measure(d.selectionSet, fragments, limits);
        if (depth > limits.maxDepth) {
          context.reportError(
            new GraphQLError(`the query is nested ${depth} deep; the limit is ${limits.maxDepth}`, {
              nodes: [d],
              extensions: { code: "QUERY_TOO_DEEP" },
            }),
          );
        }
        if (cost > limits.maxCost) {
          context.reportError(
            new GraphQLError(`the query costs ${cost}; the limit is ${limits.maxCost} (ask for smaller pages)`, {
              nodes: [d],
              extensions: { code: "QUERY_TOO_COMPLEX" },
            }),
          );
        }
      }
      return false;
    },
  });
}
