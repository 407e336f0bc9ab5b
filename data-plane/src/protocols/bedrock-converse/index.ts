// Bedrock's Converse API as an upstream wire protocol: what every Bedrock model that is not Anthropic's is
// called with (providers/bedrock). Upstream side only: no client speaks it to the gateway.

import type { UpstreamErrorInfo } from "../canonical.ts";
import { kindOfStatus, obj, parseJsonLoose, str } from "../shared.ts";
import type { UpstreamAdapter } from "../types.ts";
import { buildConverseRequest } from "./request.ts";
import { parseConverseResponse } from "./response.ts";
import { createConverseStreamDecoder } from "./stream.ts";

export { conversePath, modelPathSegment } from "./request.ts";
export { usageOfConverse } from "./response.ts";
export { kindOfException } from "./stream.ts";

/** AWS's error body: {"message": "…"} (some services write "Message"). */
export function parseConverseError(status: number, body: string): UpstreamErrorInfo {
  const b = obj(parseJsonLoose(body));
  return {
    kind: kindOfStatus(status),
    code: `http_${status}`,
    message: str(b.message) ?? str(b.Message) ?? (body.trim().slice(0, 500) || `Upstream answered HTTP ${status}.`),
    param: null,
  };
}

export const bedrockConverse: UpstreamAdapter = {
  // Bedrock's paths have no version segment: /model/{modelId}/converse.
  basePath: "",
  buildUpstreamRequest: buildConverseRequest,
  // Calls are signed (SigV4) by the Bedrock provider, which alone knows the credentials.
  authHeaders: () => ({}),
  parseUpstreamResponse: parseConverseResponse,
  createUpstreamStreamDecoder: createConverseStreamDecoder,
  parseUpstreamError: parseConverseError,
  providerName: "aws.bedrock",
};
