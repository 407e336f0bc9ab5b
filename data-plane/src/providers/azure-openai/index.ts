// Azure OpenAI: OpenAI's Chat Completions, Responses and embeddings on an Azure resource, in either of the
// two URL forms Azure documents:
//
//   deployments form (apiVersion given): the route's model is the deployment's name
//     {baseUrl}/openai/deployments/{deployment}/chat/completions?api-version={apiVersion}
//     {baseUrl}/openai/deployments/{deployment}/embeddings?api-version={apiVersion}
//     {baseUrl}/openai/responses?api-version={apiVersion}          (the deployment in the body's `model`)
//   v1 form (no apiVersion, baseUrl …/openai/v1): OpenAI's own paths, the deployment in the body's `model`
//     {baseUrl}/chat/completions, {baseUrl}/responses, {baseUrl}/embeddings
//
// Auth is the resource's key in the `api-key` header, or with `auth: entra` a Microsoft Entra ID bearer from
// @azure/identity's DefaultAzureCredential (environment, workload identity, managed identity, Azure CLI).
// Azure's answers are OpenAI's with content-filter annotations (see the protocol's stream decoder).

import type { RouteSnapshot, UpstreamProtocol } from "../../contract/index.ts";
import { parseOpenAIUpstreamError } from "../../protocols/openai/errors.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";
import { ProviderAuthError } from "../types.ts";
import { entraToken } from "./entra.ts";

const PROTOCOLS: readonly UpstreamProtocol[] = ["openai", "openai-responses"];

/** The resource's root: the base URL without a trailing /openai (operators copy it either way from the portal). */
const resourceRoot = (baseUrl: string): string => baseUrl.replace(/\/+$/, "").replace(/\/openai$/, "");

/** The v1 form's base: `…/openai/v1` as written, or added to a bare resource URL. */
const v1Base = (baseUrl: string): string => {
  const b = baseUrl.replace(/\/+$/, "");
  return /\/openai\/v1$/.test(b) ? b : `${resourceRoot(b)}/openai/v1`;
};

/** The URL of a protocol call; the path's own query (a passthrough client's) is kept beside api-version. */
export function azureUrl(route: RouteSnapshot, call: ProtocolCall): string {
  const apiVersion = route.providerOptions?.apiVersion;
  const q = call.path.indexOf("?");
  const path = q === -1 ? call.path : call.path.slice(0, q);
  const query = new URLSearchParams(q === -1 ? "" : call.path.slice(q + 1));
  if (!apiVersion) {
    const s = query.toString();
    return `${v1Base(route.baseUrl)}${path}${s === "" ? "" : `?${s}`}`;
  }
  query.set("api-version", apiVersion);
  const root = `${resourceRoot(route.baseUrl)}/openai`;
  // Responses (and its sub-paths) are not per deployment: the deployment is the body's model.
  const where = path.startsWith("/responses")
    ? `${root}${path}`
    : `${root}/deployments/${encodeURIComponent(route.upstreamModel)}${path}`;
  return `${where}?${query.toString()}`;
}

async function authHeader(route: RouteSnapshot, ctx: ProviderContext): Promise<Record<string, string>> {
  if (route.providerOptions?.auth === "entra") return { authorization: `Bearer ${await entraToken()}` };
  const key = ctx.apiKey(route);
  if (key === null) throw new ProviderAuthError("an Azure OpenAI upstream needs an apiKey, or auth: entra");
  return { "api-key": key };
}

export const azureOpenAI: Provider = {
  name: "azure-openai",
  // Entra ID needs no key; a key-based route without one fails its calls as an upstream auth failure.
  needsKey: false,
  options: ["apiVersion", "auth"],
  protocolFor(_model: string, configured: UpstreamProtocol | null): UpstreamProtocol {
    const p = configured ?? "openai";
    if (!PROTOCOLS.includes(p)) throw new Error(`Azure OpenAI speaks openai or openai-responses, not ${p}`);
    return p;
  },
  // Every resource has its own host: the operator gives it.
  defaultBaseUrl: () => null,
  async prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): Promise<ProviderRequest> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (call.headers !== undefined)
      for (const [k, v] of Object.entries(call.headers)) if (k.toLowerCase() !== "authorization") headers[k] = v;
    Object.assign(headers, await authHeader(route, ctx));
    return { url: azureUrl(route, call), headers, body: call.body };
  },
  parseError(status, _headers, body) {
    // An unknown deployment is Azure's name for an unknown model (its message names neither).
    if (status !== 404 || !body.includes('"DeploymentNotFound"')) return null;
    return { ...parseOpenAIUpstreamError(status, body), code: "model_not_found" };
  },
};
