// Small helpers for the client routes each adapter declares.

import { GatewayError } from "../errors.ts";
import type { ClientEndpoint, ClientOperation, ClientRoute } from "./types.ts";

/** An endpoint at one exact path. */
export const exact = (method: ClientEndpoint["method"], path: string, op: ClientOperation): ClientEndpoint => ({
  method,
  op,
  label: `${method} ${path}`,
  match: (p) => (p === path ? {} : null),
});

/** An endpoint whose path matches `pattern`; `route` reads the parameters from the match. */
export const pattern = (
  method: ClientEndpoint["method"],
  /** the path with its parameters in braces, for listings */
  path: string,
  re: RegExp,
  op: ClientOperation,
  route: (m: RegExpExecArray, query: URLSearchParams | null) => ClientRoute,
): ClientEndpoint => ({
  method,
  op,
  label: `${method} ${path}`,
  match: (p, query) => {
    const m = re.exec(p);
    return m ? route(m, query) : null;
  },
});

/** A path segment's percent-escapes decoded; a malformed escape is the caller's 400, not a server error. */
export function decodePathSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new GatewayError(
      "invalid_request",
      "invalid_path",
      `The path segment '${s.slice(0, 200)}' has a malformed percent-escape.`,
    );
  }
}
