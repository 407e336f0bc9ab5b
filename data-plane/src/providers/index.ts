// The provider registry: one line per provider, each in its own folder (see types.ts for what a provider is).
// The configuration's `provider:` names, GraphQL's and the console's choices all come from this list.

import { azureOpenAI } from "./azure-openai/index.ts";
import { bedrock } from "./bedrock/index.ts";
import { direct } from "./direct/index.ts";
import { vertex } from "./vertex/index.ts";
import { deepseek } from "./deepseek/index.ts";
import { fireworks } from "./fireworks/index.ts";
import { groq } from "./groq/index.ts";
import { mistral } from "./mistral/index.ts";
import { moonshot } from "./moonshot/index.ts";
import { ollama } from "./ollama/index.ts";
import { openrouter } from "./openrouter/index.ts";
import { qwen } from "./qwen/index.ts";
import { together } from "./together/index.ts";
import { vllm } from "./vllm/index.ts";
import { xai } from "./xai/index.ts";
import type { Provider } from "./types.ts";

export const providers = {
  direct,
  // OpenAI-compatible presets (openai-compatible/preset.ts)
  deepseek,
  fireworks,
  groq,
  mistral,
  moonshot,
  ollama,
  openrouter,
  qwen,
  together,
  vllm,
  xai,
  bedrock,
  vertex,
  "azure-openai": azureOpenAI,
} as const satisfies Record<string, Provider>;

export type ProviderName = keyof typeof providers;
export const PROVIDERS = Object.keys(providers) as ProviderName[];

export type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "./types.ts";
export { ProviderAuthError } from "./types.ts";

/** A route's provider (absent: direct); null for a name this data plane does not know (a newer control plane). */
export function providerOf(name: string | undefined): Provider | null {
  if (name === undefined) return direct;
  return Object.hasOwn(providers, name) ? providers[name as ProviderName] : null;
}
