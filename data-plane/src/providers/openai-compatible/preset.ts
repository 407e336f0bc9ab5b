import type { RouteSnapshot, UpstreamProtocol } from "../../contract/index.ts";
import { protocolRequest } from "../direct/index.ts";
import type { Provider, ProviderContext, ProtocolCall, ProviderRequest } from "../types.ts";

// An OpenAI-compatible vendor: OpenAI's Chat Completions (and embeddings where the vendor makes them) at the
// vendor's own base URL with a bearer key. What differs between vendors is small and lives in the preset's
// own folder: its endpoint, whether it needs a key, and a change to the body where the vendor refuses part of
// OpenAI's. What the vendors add to answers (reasoning_content, reasoning, DeepSeek's cache hit and miss
// counts, Moonshot's cached_tokens, Groq's x_groq.usage) is read by the OpenAI protocol itself, so it reaches
// every client protocol and the bill whichever provider sent it.

export interface PresetSpec {
  name: string;
  /** the vendor's documented base URL for OpenAI-compatible calls (the operator's `baseUrl` overrides it) */
  baseUrl: string;
  /** local servers (vLLM, Ollama) run without one */
  needsKey?: boolean;
  /** the vendor's change to an OpenAI body, applied to the JSON text; null: sent as built */
  body?: (call: ProtocolCall) => string | Buffer | null;
}

export function openAICompatible(spec: PresetSpec): Provider {
  return {
    name: spec.name,
    needsKey: spec.needsKey ?? true,
    protocolFor(_model: string, configured: UpstreamProtocol | null): UpstreamProtocol {
      if (configured !== null && configured !== "openai")
        throw new Error(`${spec.name} speaks OpenAI's Chat Completions (protocol openai), not ${configured}`);
      return "openai";
    },
    defaultBaseUrl: () => spec.baseUrl,
    prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): ProviderRequest {
      const req = protocolRequest(route, call, ctx);
      const changed = spec.body?.(call) ?? null;
      return changed === null ? req : { ...req, body: changed };
    },
  };
}
