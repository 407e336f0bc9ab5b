import type { RouteSnapshot, UpstreamProtocol } from "../../contract/index.ts";
import { upstreamAdapterOf } from "../../protocols/index.ts";
import { upstreamBase } from "../../upstreams/base-url.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";

// The protocol's own vendor, or any server of that protocol (a proxy, a self-hosted model server), at the
// operator's base URL with the protocol's own auth header. Also the base the OpenAI-compatible presets build on.

// A route's headers (content type, its credential), built once per route object (and, for a key pool, per
// key of it): a new snapshot brings new route objects. Shared by every call to the route, so never modified
// (tracing copies them).
const headersOfRoute = new WeakMap<RouteSnapshot, Readonly<Record<string, string>>>();
const headersOfPoolKey = new WeakMap<RouteSnapshot, Map<string, Readonly<Record<string, string>>>>();

export function protocolHeaders(route: RouteSnapshot, ctx: ProviderContext): Readonly<Record<string, string>> {
  if (ctx.keyId !== undefined) return poolKeyHeaders(route, ctx, ctx.keyId);
  let h = headersOfRoute.get(route);
  if (h === undefined) headersOfRoute.set(route, (h = buildHeaders(route, ctx)));
  return h;
}

function poolKeyHeaders(route: RouteSnapshot, ctx: ProviderContext, keyId: string): Readonly<Record<string, string>> {
  let byKey = headersOfPoolKey.get(route);
  if (byKey === undefined) headersOfPoolKey.set(route, (byKey = new Map()));
  let h = byKey.get(keyId);
  if (h === undefined) byKey.set(keyId, (h = buildHeaders(route, ctx)));
  return h;
}

function buildHeaders(route: RouteSnapshot, ctx: ProviderContext): Readonly<Record<string, string>> {
  const built: Record<string, string> = { "content-type": "application/json" };
  const key = ctx.apiKey(route);
  if (key !== null) Object.assign(built, upstreamAdapterOf(route.protocol).authHeaders(key));
  return Object.freeze(built);
}

/** The request at `base` + the protocol's path with the protocol's own auth. */
export function protocolRequest(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): ProviderRequest {
  const own = protocolHeaders(route, ctx);
  return {
    url: upstreamBase(route.protocol, route.baseUrl) + call.path,
    headers: call.headers === undefined ? (own as Record<string, string>) : { ...own, ...call.headers },
    body: call.body,
  };
}

export const direct: Provider = {
  name: "direct",
  needsKey: false,
  protocolFor(_model: string, configured: UpstreamProtocol | null): UpstreamProtocol {
    if (configured === null) throw new Error("an upstream without a provider needs its protocol");
    return configured;
  },
  defaultBaseUrl: () => null,
  prepare: protocolRequest,
};
