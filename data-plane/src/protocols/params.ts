// A protocol's request parameters as a table: for each canonical field it carries, its name in the protocol's
// body and, where the value is not the same on both sides, how it is read and written. A parser reads a client's
// body with it (readParams), a builder writes an upstream's (writeParams): the one table says both ways what
// each parameter is. Rows are in the body's order, the order they are read into the canonical form and written
// upstream. What happens to a parameter an upstream does not carry is translation.ts's table (Translation.lacks).

import type { CanonicalRequest } from "./canonical.ts";

/** The canonical fields that are one parameter of a request, beside its messages, tools and model. */
export type ParamField =
  | "toolChoice"
  | "parallelToolCalls"
  | "stop"
  | "temperature"
  | "topP"
  | "topK"
  | "maxOutputTokens"
  | "responseFormat"
  | "reasoning"
  | "n"
  | "seed"
  | "presencePenalty"
  | "frequencyPenalty"
  | "logprobs"
  | "user";

type Value<F extends ParamField> = NonNullable<CanonicalRequest[F]>;

/** A body's own keys, without the index signature of a loose zod object. */
type Own<B> = keyof { [K in keyof B as string extends K ? never : K]: B[K] };

/** The keys of a body `B` that hold the canonical field's type as it is (null allowed: it is no value). */
type KeyOf<B, F extends ParamField> = { [K in Own<B>]-?: NonNullable<B[K]> extends Value<F> ? K : never }[Own<B>] &
  string;

export interface Param<B, F extends ParamField> {
  /** The protocol's name for it: the key of the body it is read from and written to. */
  name: string;
  /** Reads it from a client's body when it is not `name` as it is; null or undefined: the client gave none. */
  read?: (b: B) => CanonicalRequest[F] | null | undefined;
  /**
   * Its value in an upstream's body when it is not the canonical one as it is (undefined: nothing written).
   * false: the builder's to work out, as it needs more than the value (the model's settings, other
   * parameters): written from what writeParams is given, or not at all.
   */
  write?: ((v: Value<F>) => unknown) | false;
}

/** One protocol's parameters, in its body's order: a name (read and written as it is) or a Param. */
export type ParamTable<B> = { readonly [F in ParamField]?: KeyOf<B, F> | Param<B, F> };

type AnyParam = string | { name: string; read?: (b: never) => unknown; write?: ((v: never) => unknown) | false };

/** Reads the table's parameters from a client's body `b` into the canonical request (a null one is none). */
export function readParams<B extends object>(table: ParamTable<B>, b: B, req: CanonicalRequest): void {
  const into = req as unknown as Record<string, unknown>;
  for (const field in table) {
    const p = table[field as ParamField] as AnyParam;
    const v =
      typeof p === "string"
        ? (b as Record<string, unknown>)[p]
        : p.read !== undefined
          ? (p.read as (b: B) => unknown)(b)
          : (b as Record<string, unknown>)[p.name];
    if (v != null) into[field] = v;
  }
}

/**
 * Writes the canonical request's parameters into an upstream body `to`, each under the table's name. `given`
 * holds the values, in the upstream's terms, of the parameters whose write is false (the builder's).
 */
export function writeParams<B>(
  table: ParamTable<B>,
  req: CanonicalRequest,
  to: Record<string, unknown>,
  given?: { readonly [F in ParamField]?: unknown },
): void {
  const from = req as unknown as Record<string, unknown>;
  for (const field in table) {
    const p = table[field as ParamField] as AnyParam;
    if (typeof p === "string") {
      const v = from[field];
      if (v !== undefined) to[p] = v;
      continue;
    }
    let v: unknown;
    if (p.write === false) v = given?.[field as ParamField];
    else {
      v = from[field];
      if (v !== undefined && p.write !== undefined) v = (p.write as (v: unknown) => unknown)(v);
    }
    if (v !== undefined) to[p.name] = v;
  }
}
