import { hash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { GatewayError } from "../errors.ts";

// Exactly "Bearer <key>": one space, no padding. Anything else is malformed, as the specification says.
const bearer = /^Bearer (sk-[A-Za-z0-9_-]{8,200})$/;
const bareKey = /^sk-[A-Za-z0-9_-]{8,200}$/;

// crypto.hash: one call, no Hash object; a third of createHash().update().digest()'s time on a key-sized input,
// and this runs on every call.
export const hashKey = (key: string): string => hash("sha256", key, "hex");

import type { KeySource } from "../protocols/index.ts";

export type { KeySource };

/**
 * Finds the API key where the client's protocol puts it. Returns the SHA-256 of the key (the key itself is
 * never kept, logged or compared in clear) or throws a 401.
 */
export function keyHashFrom(
  headers: IncomingHttpHeaders,
  alternatives: readonly KeySource[] = [],
  queryKey?: string | null,
): string {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = bearer.exec(auth);
    if (!m) throw malformed();
    return hashKey(m[1]!);
  }
  for (const source of alternatives) {
    const v = source === "query" ? queryKey : headers[source];
    if (typeof v === "string") {
      if (!bareKey.test(v)) throw malformed();
      return hashKey(v);
    }
  }
  throw new GatewayError(
    "authentication",
    "missing_api_key",
    "No API key provided. Send the header 'Authorization: Bearer <API_KEY>'.",
  );
}

const malformed = () =>
  new GatewayError(
    "authentication",
    "invalid_api_key",
    "Malformed API key or Authorization header. Use the form 'Authorization: Bearer <API_KEY>' with one space and no extra whitespace.",
  );

export const unknownKey = () =>
  new GatewayError(
    "authentication",
    "invalid_api_key",
    "Invalid API key. Check the key or create a new one in the console.",
  );
