import type { RouteSnapshot, UpstreamProtocol } from "../../contract/index.ts";
import { protocolRequest } from "../direct/index.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";

// An OpenAI-compatible vendor: OpenAI's Chat Completions (and embeddings where the vendor makes them) at the
// vendor's own base URL with a bearer key. What differs between vendors is small and lives in the preset's
// own folder: its endpoint, whether it needs a key, and the traits the OpenAI request builder and passthrough
// read where the vendor refuses part of OpenAI's (streamUsageUnasked: no stream_options). What the vendors add to answers (reasoning_content, reasoning, DeepSeek's cache hit and miss
// counts, Moonshot's cached_tokens, Groq's x_groq.usage) is read by the OpenAI protocol itself, so it reaches
// every client protocol and the bill whichever provider sent it.

export interface PresetSpec {
  name: string;
  /** the vendor's documented base URL for OpenAI-compatible calls (the operator's `baseUrl` overrides it) */
  baseUrl: string;
  /** local servers (vLLM, Ollama) run without one */
  needsKey?: boolean;
  /** its streams carry their usage unasked and its API refuses `stream_options` (Provider.streamUsageUnasked) */
  streamUsageUnasked?: boolean;
}

export function openAICompatible(spec: PresetSpec): Provider {
  return {
    name: spec.name,
    needsKey: spec.needsKey ?? true,
    ...(spec.streamUsageUnasked ? { streamUsageUnasked: true } : {}),
    protocolFor(_model: string, configured: UpstreamProtocol | null): UpstreamProtocol {
      if (configured !== null && configured !== "openai")
        throw new Error(`${spec.name} speaks OpenAI's Chat Completions (protocol openai), not ${configured}`);
      return "openai";
    },
    defaultBaseUrl: () => spec.baseUrl,
    prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): ProviderRequest {
      return protocolRequest(route, call, ctx);
    },
  };
}
