import type { UpstreamProtocol } from "../../contract/index.ts";

// Which of Bedrock's APIs a model is called with. Anthropic's models take the Messages body through
// InvokeModel, so an Anthropic client's request passes through as it is (cache_control, betas, thinking);
// every other model takes Converse, Bedrock's one shape for all of them.

/**
 * An Anthropic model id on Bedrock: `anthropic.claude-…`, a cross-region inference profile `us.anthropic.…`,
 * `global.anthropic.…`, `us-gov.anthropic.…`, or either inside an ARN (…:inference-profile/us.anthropic.…,
 * …:foundation-model/anthropic.…). An application inference profile's ARN names no model: Converse serves it
 * whatever is behind it, or the operator says `protocol: anthropic` for Claude.
 */
const ANTHROPIC = /^(?:arn:[^/]+\/)?(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\./;

export const isAnthropicModel = (modelId: string): boolean => ANTHROPIC.test(modelId);

export function bedrockProtocolFor(upstreamModel: string, configured: UpstreamProtocol | null): UpstreamProtocol {
  if (configured === null) return isAnthropicModel(upstreamModel) ? "anthropic" : "bedrock-converse";
  if (configured === "anthropic" || configured === "bedrock-converse") return configured;
  throw new Error(
    `a bedrock upstream speaks anthropic (InvokeModel, Anthropic's models) or bedrock-converse (every model), not ${configured}; leave protocol out to have it chosen from the model id`,
  );
}
