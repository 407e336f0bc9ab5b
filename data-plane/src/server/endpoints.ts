import { GatewayError } from "../errors.ts";
import { protocols } from "../protocols/index.ts";

// The client-facing endpoints, as the unknown-path 404 lists them: every protocol adapter's routes, then the
// model lists, so the answer to a wrong path is the list of right ones.

export const ENDPOINTS: readonly string[] = [
  ...Object.values(protocols).flatMap((p) => p.endpoints.map((e) => e.label)),
  "GET /v1/models",
  "GET /v1/models/{model}",
  "GET /v1beta/models",
  "GET /v1beta/models/{model}",
];

/** Each endpoint's path without its version prefix, to recognise a right endpoint behind a wrong prefix. */
const tails = ENDPOINTS.map((e) => {
  const [method, path] = e.split(" ") as [string, string];
  const version = path.startsWith("/v1beta/") ? "/v1beta" : "/v1";
  return { method, version, pattern: new RegExp(`${path.slice(version.length).replace(/\{\w+\}/g, "[^/]+")}$`) };
});

/**
 * The path that was probably meant: the same endpoint under its right prefix, for a base URL that lacks
 * `/v1`, repeats it, or ends in a slash. Null when the path resembles no endpoint.
 */
export function likelyPath(path: string, method: string | undefined): string | null {
  const cleaned = path.replace(/\/{2,}/g, "/").replace(/\/+$/, "");
  for (const t of tails) {
    if (method !== undefined && method !== t.method) continue;
    const m = t.pattern.exec(cleaned);
    if (!m) continue;
    const meant = t.version + m[0];
    if (meant !== path) return meant;
  }
  return null;
}

/** The 404 for a path no endpoint answers: the endpoints that exist, and the likely one when there is one. */
export function unknownPath(path: string, method: string | undefined): GatewayError {
  const shown = path.slice(0, 200);
  const meant = likelyPath(path, method);
  const base = meant?.startsWith("/v1beta")
    ? "a Gemini client's base URL is the gateway's address with no path"
    : "the client's base URL ends in '/v1', once, with no trailing slash";
  const hint = meant ? ` Did you mean '${meant}'? (${base}.)` : "";
  return new GatewayError(
    "not_found",
    "unknown_path",
    `Unknown path '${shown}'.${hint} This gateway serves: ${ENDPOINTS.join(", ")}.`,
  );
}
