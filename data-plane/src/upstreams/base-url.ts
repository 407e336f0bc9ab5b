import type { UpstreamProtocol } from "../contract/index.ts";
import { upstreamAdapterOf } from "../protocols/index.ts";

// An upstream's base URL as the operator wrote it → the prefix the protocol's paths go after. Vendors
// document their base URL both ways (Anthropic's SDK takes https://api.anthropic.com, its HTTP reference
// shows …/v1/messages; Google's SDK takes the bare host and adds /v1beta), so both are accepted: a base URL
// with no path gets the protocol's version segment, one with a path (…/v1, …/v1beta, a proxy's
// /openai/v1) is used as written.

const resolved = new Map<string, string>();

export function upstreamBase(protocol: UpstreamProtocol, baseUrl: string): string {
  const key = `${protocol} ${baseUrl}`;
  let out = resolved.get(key);
  if (out === undefined) {
    out = resolve(protocol, baseUrl);
    if (resolved.size >= 1000) resolved.clear();
    resolved.set(key, out);
  }
  return out;
}

function resolve(protocol: UpstreamProtocol, baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return trimmed; // the transport reports it; the config loader has already refused anything worse
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return trimmed;
  // A query or fragment in a base URL has no place to go once a path is appended: keep it as written.
  if (url.search !== "" || url.hash !== "") return trimmed;
  return url.pathname === "/" || url.pathname === ""
    ? `${url.origin}${protocol === "demo" ? "" : upstreamAdapterOf(protocol).basePath}`
    : trimmed;
}
