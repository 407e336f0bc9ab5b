// Google Vertex AI: Gemini models speak Gemini's protocol and Claude models Anthropic's Messages, both under a
// project's path, with an OAuth2 bearer from a service account or the application default credentials.
//
//   Gemini:  {root}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:generateContent
//            …:streamGenerateContent?alt=sse; embeddings …:predict (embeddings.ts)
//   Claude:  {root}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict
//            …:streamRawPredict, the Messages body without `model` and with anthropic_version (claude.ts)
//
// {root} is https://{region}-aiplatform.googleapis.com (https://aiplatform.googleapis.com for the global
// region) or the operator's baseUrl (its origin and any path before /v1).

import type { RouteSnapshot, UpstreamProtocol } from "../../contract/index.ts";
import { parseGeminiUpstreamError } from "../../protocols/gemini/errors.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";
import { vertexAccessToken, vertexTokens } from "./auth.ts";
import { modelSegment, publisherBase, vertexRoot } from "./paths.ts";
import { claudeBody, claudeUrl } from "./claude.ts";
import { predictAnswer, predictBody, isGeminiEmbedPath } from "./embeddings.ts";

const isClaude = (model: string): boolean => model.startsWith("claude");

async function headersFor(route: RouteSnapshot, ctx: ProviderContext): Promise<Record<string, string>> {
  const token = await vertexAccessToken(ctx.secrets(route).serviceAccount);
  return { "content-type": "application/json", authorization: `Bearer ${token}` };
}

export const vertex: Provider = {
  name: "vertex",
  needsKey: false,
  requiredOptions: ["project", "region"],
  options: ["project", "region"],
  // the service account's key file (the config's credentialsFile, read by the control plane); none: ADC
  secrets: ["serviceAccount"],
  protocolFor(model: string, configured: UpstreamProtocol | null): UpstreamProtocol {
    if (configured !== null && configured !== "gemini" && configured !== "anthropic")
      throw new Error(`Vertex speaks gemini (Gemini models) or anthropic (Claude models), not ${configured}`);
    // The upstream alone (no model yet): any of the two may be meant.
    if (model === "") return configured ?? "gemini";
    const own: UpstreamProtocol = isClaude(model) ? "anthropic" : "gemini";
    if (configured !== null && configured !== own)
      throw new Error(
        `Vertex serves ${model} in the ${own} protocol, not ${configured}: leave out the upstream's protocol`,
      );
    return own;
  },
  defaultBaseUrl: vertexRoot,
  async prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): Promise<ProviderRequest> {
    const headers = await headersFor(route, ctx);
    if (route.protocol === "anthropic") {
      return {
        url: claudeUrl(publisherBase(route, "anthropic"), route.upstreamModel, call.stream),
        headers,
        body: claudeBody(call),
      };
    }
    const base = publisherBase(route, "google");
    if (call.op === "embed" && isGeminiEmbedPath(call.path))
      return { url: `${base}/models/${modelSegment(route.upstreamModel)}:predict`, headers, body: predictBody(call) };
    // Gemini's paths are the protocol's own under the publisher's prefix; the client's headers (none are
    // forwarded for Gemini today) never carry its key here.
    return { url: base + call.path, headers, body: call.body };
  },
  answer(route, call, res) {
    return route.protocol === "gemini" && call.op === "embed" && isGeminiEmbedPath(call.path)
      ? predictAnswer(call, res)
      : res;
  },
  parseError(status, _headers, body) {
    // Vertex no longer takes a token it issued (revoked, the account disabled or its key deleted): the cached
    // tokens are forgotten, so the next call asks for a new one instead of being refused until the refresh.
    if (status === 401) vertexTokens.clear();
    // Vertex answers its own refusals (auth, quota, an unknown model or path) in Google's shape on Claude's
    // paths too; Claude's own are Anthropic's, read by the protocol's parser.
    if (!/^\s*\{\s*"error"\s*:\s*\{/.test(body) || !body.includes('"status"')) return null;
    return parseGeminiUpstreamError(status, body);
  },
};
