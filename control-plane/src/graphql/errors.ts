import { GraphQLError } from "graphql";
import { Prisma } from "../generated/prisma/client.ts";
import { NotFoundError } from "../services/accounts.ts";
import { AppError } from "../services/errors.ts";
import { AmountError } from "../services/money.ts";

// Every error leaves with a stable `extensions.code`. Errors the code raised on purpose (AppError, GraphQLError)
// keep their message; anything else is logged and replaced by "Unexpected error." (no internals, no stacks).

function classify(err: unknown): { code: string; message: string; extra?: Record<string, unknown> } | null {
  if (err instanceof AppError) return { code: err.code, message: err.message, extra: err.extra };
  if (err instanceof NotFoundError) return { code: "NOT_FOUND", message: err.message };
  if (err instanceof AmountError) return { code: "BAD_USER_INPUT", message: err.message };
  // a sum the database cannot hold (a balance pushed past BIGINT): the request's fault, and nothing was written
  if (err instanceof Error && /out of range|22003/.test(`${err.message} ${(err as { cause?: unknown }).cause ?? ""}`))
    return { code: "BAD_USER_INPUT", message: "the amount is out of range" };
  if (err instanceof Prisma.PrismaClientKnownRequestError) {
    if (err.code === "P2002") return { code: "CONFLICT", message: "this already exists" };
    if (err.code === "P2025" || err.code === "P2001") return { code: "NOT_FOUND", message: "not found" };
    if (err.code === "P2003")
      return { code: "BAD_USER_INPUT", message: "this refers to something that does not exist" };
  }
  return null;
}

export function logInternal(err: unknown) {
  const e = err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { value: String(err) };
  process.stderr.write(
    `${JSON.stringify({ level: "error", time: new Date().toISOString(), msg: "graphql internal error", err: e })}\n`,
  );
}

/**
 * By name rather than instanceof: graphql ships CommonJS and ESM builds, and a test runner or bundler may load both,
 * making two GraphQLError classes.
 */
const isGraphQLError = (e: unknown): e is GraphQLError => e instanceof Error && e.name === "GraphQLError";

export function maskError(error: unknown, message: string): Error {
  if (isGraphQLError(error)) {
    const orig = error.originalError;
    const at = { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path };
    if (!orig || isGraphQLError(orig)) {
      if (error.extensions?.code) return error;
      const inner = isGraphQLError(orig) ? orig.extensions : {};
      return new GraphQLError(error.message, {
        ...at,
        extensions: { ...error.extensions, code: inner.code ?? "BAD_USER_INPUT" },
      });
    }
    const known = classify(orig);
    if (known) return new GraphQLError(known.message, { ...at, extensions: { code: known.code, ...known.extra } });
    logInternal(orig);
    return new GraphQLError(message, { ...at, extensions: { code: "INTERNAL_SERVER_ERROR" } });
  }
  const known = classify(error);
  if (known) return new GraphQLError(known.message, { extensions: { code: known.code, ...known.extra } });
  logInternal(error);
  return new GraphQLError(message, { extensions: { code: "INTERNAL_SERVER_ERROR" } });
}
