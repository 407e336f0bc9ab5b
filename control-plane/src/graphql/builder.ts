import SchemaBuilder from "@pothos/core";
import PrismaPlugin from "@pothos/plugin-prisma";
import ScopeAuthPlugin from "@pothos/plugin-scope-auth";
import ZodPlugin from "@pothos/plugin-zod";
import type PrismaTypes from "../generated/pothos-types.ts";
import { getDatamodel } from "../generated/pothos-types.ts";
import { GraphQLError, Kind } from "graphql";
import type { GqlContext } from "./context.ts";

export const isOperator = (ctx: GqlContext) =>
  ctx.principal?.user.role === "operator" &&
  (ctx.principal.tokenScopes === null || ctx.principal.tokenScopes.includes("operator"));

export const builder = new SchemaBuilder<{
  Context: GqlContext;
  PrismaTypes: PrismaTypes;
  AuthScopes: {
    /** signed in (session or token) */
    authenticated: boolean;
    /** signed in through a browser session: needed for security settings and token management */
    session: boolean;
    /** an operator (with the operator scope when using a token) */
    operator: boolean;
    /** password step done, TOTP step pending */
    pendingSecondStep: boolean;
  };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    Long: { Input: number; Output: bigint | number };
  };
  DefaultFieldNullability: false;
}>({
  // Scope auth first, so a field's authorisation runs before the Prisma plugin plans its relation query.
  plugins: [ScopeAuthPlugin, ZodPlugin, PrismaPlugin],
  // Arguments validated with the services' zod schemas (services/inputs.ts) before a resolver runs; a refusal is
  // the same BAD_USER_INPUT, naming the field, that the services raise.
  zod: {
    validationError: (error) => {
      const issue = error.issues[0];
      const field = [...(issue?.path ?? [])].reverse().find((p) => typeof p === "string");
      return new GraphQLError(issue?.message ?? "invalid input", {
        extensions: { code: "BAD_USER_INPUT", ...(field ? { field } : {}) },
      });
    },
  },
  defaultFieldNullability: false,
  // Object types backed by Prisma models (builder.prismaObject) load their relations in the parent's query, or
  // batched per request when the parent came from a plain resolver, instead of one query per parent.
  prisma: { client: (ctx) => ctx.app.prisma, dmmf: getDatamodel() },
  scopeAuth: {
    authScopes: (ctx) => ({
      authenticated: ctx.principal !== null,
      session: ctx.principal?.via === "session",
      operator: isOperator(ctx),
      pendingSecondStep: ctx.auth.pending !== null,
    }),
    unauthorizedError: (_parent, ctx, _info, result) =>
      ctx.principal
        ? new GraphQLError(result.message.startsWith("Not authorized") ? "you may not do this" : result.message, {
            extensions: { code: "FORBIDDEN" },
          })
        : new GraphQLError("sign in first", { extensions: { code: "UNAUTHENTICATED" } }),
  },
});

builder.scalarType("DateTime", {
  description: "An instant, as ISO 8601 text with a time zone (e.g. 2026-01-02T03:04:05.000Z).",
  serialize: (d) => d.toISOString(),
  parseValue: (v) => {
    if (typeof v !== "string" || !/^\d{4}-\d{2}-\d{2}T/.test(v) || !/(Z|[+-]\d{2}:?\d{2})$/.test(v)) {
      throw new GraphQLError("a DateTime is ISO 8601 text with a time zone", {
        extensions: { code: "BAD_USER_INPUT" },
      });
    }
    const d = new Date(v);
    if (Number.isNaN(d.getTime()))
      throw new GraphQLError("not a valid DateTime", { extensions: { code: "BAD_USER_INPUT" } });
    return d;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING)
      throw new GraphQLError("a DateTime is a string", { extensions: { code: "BAD_USER_INPUT" } });
    const d = new Date(ast.value);
    if (Number.isNaN(d.getTime()) || !/(Z|[+-]\d{2}:?\d{2})$/.test(ast.value)) {
      throw new GraphQLError("not a valid DateTime", { extensions: { code: "BAD_USER_INPUT" } });
    }
    return d;
  },
});

builder.scalarType("Long", {
  description: "A whole number beyond 32 bits (token counts), exact up to 2^53.",
  serialize: (v) => Number(v),
  parseValue: (v) => {
    if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new GraphQLError("not a whole number");
    return v;
  },
});

export type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

builder.queryType({});
builder.mutationType({});
