// AWS Bedrock: Anthropic's models through InvokeModel / InvokeModelWithResponseStream with the Messages body
// (Anthropic clients pass through), every other model through Converse / ConverseStream (protocols/
// bedrock-converse); each call signed with SigV4; streams re-framed from AWS's event stream into SSE.

import type { RouteSnapshot } from "../../contract/index.ts";
import { conversePath, modelPathSegment } from "../../protocols/bedrock-converse/index.ts";
import type { UpstreamResponse } from "../../upstreams/transport.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";
import { ProviderAuthError } from "../types.ts";
import { parseBedrockError } from "./errors.ts";
import { reframeAnswer } from "./event-stream.ts";
import { bedrockProtocolFor } from "./models.ts";
import { signedHeaders, signerOf } from "./sign.ts";

/** The Messages API version Bedrock's Anthropic models take in the body (it replaces the anthropic-version header). */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

const invokePath = (modelId: string, stream: boolean): string =>
  `/model/${modelPathSegment(modelId)}/${stream ? "invoke-with-response-stream" : "invoke"}`;

/**
 * An Anthropic Messages body as InvokeModel takes it: no `model` (it is in the path) and no `stream` (the path
 * says it), `anthropic_version` in the body, and the client's `anthropic-beta` header as `anthropic_beta`.
 */
export function invokeBody(body: string | Buffer, headers: Record<string, string> | undefined): string {
  const b = JSON.parse(typeof body === "string" ? body : body.toString("utf8")) as Record<string, unknown>;
  delete b.model;
  delete b.stream;
  b.anthropic_version = BEDROCK_ANTHROPIC_VERSION;
  const beta = headers?.["anthropic-beta"];
  if (beta !== undefined) {
    const betas = new Set(Array.isArray(b.anthropic_beta) ? (b.anthropic_beta as unknown[]).map(String) : []);
    for (const name of beta.split(",")) if (name.trim() !== "") betas.add(name.trim());
    if (betas.size > 0) b.anthropic_beta = [...betas];
  }
  return JSON.stringify(b);
}

/** The headers a call is signed with (the protocol's vendor headers, anthropic-*, are not Bedrock's). */
function baseHeaders(anthropic: boolean, stream: boolean): Record<string, string> {
  const h: Record<string, string> = { "content-type": "application/json" };
  // InvokeModel says the answer's type: JSON, or (streamed) JSON events inside the event stream.
  if (anthropic) h[stream ? "x-amzn-bedrock-accept" : "accept"] = "application/json";
  return h;
}

export const defaultBedrockUrl = (region: string): string => `https://bedrock-runtime.${region}.amazonaws.com`;

async function prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): Promise<ProviderRequest> {
  const region = route.providerOptions?.region;
  if (!region) throw new ProviderAuthError("a bedrock upstream needs its region");
  if (call.op !== "generate") throw new ProviderAuthError("this gateway makes no embeddings through Bedrock");
  const anthropic = route.protocol === "anthropic";
  const path = anthropic
    ? invokePath(route.upstreamModel, call.stream)
    : conversePath(route.upstreamModel, call.stream);
  const url = route.baseUrl.replace(/\/+$/, "") + path;
  const body = anthropic ? invokeBody(call.body, call.headers) : call.body;
  const headers = await signedHeaders(signerOf(route, region, ctx), url, baseHeaders(anthropic, call.stream), body);
  return { url, headers, body };
}

export const bedrock: Provider = {
  name: "bedrock",
  needsKey: false, // static keys, or the default AWS credential chain
  requiredOptions: ["region"],
  options: ["region"],
  secrets: ["accessKeyId", "secretAccessKey", "sessionToken"],
  protocolFor: bedrockProtocolFor,
  defaultBaseUrl: (options) => (options.region ? defaultBedrockUrl(options.region) : null),
  prepare,
  answer: (route: RouteSnapshot, call: ProtocolCall, res: UpstreamResponse): UpstreamResponse =>
    call.stream ? reframeAnswer(res, route.protocol === "anthropic" ? "anthropic" : "converse") : res,
  parseError: parseBedrockError,
};
