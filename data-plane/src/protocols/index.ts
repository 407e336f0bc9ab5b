// The protocol registry: each protocol's folder exports one adapter (its routes, translators, upstream paths,
// same-protocol relay, model list and error frames); this lists them. A request flows client adapter →
// canonical → upstream adapter, and the answer the other way:
//
//   const req = protocols[client].parseClientRequest(body, route);
//   const up = protocols[upstream].buildUpstreamRequest(req, upstreamModel, { stream: req.stream });
//   …send with protocols[upstream].authHeaders(key)…
//   protocols[client].renderClientResponse(protocols[upstream].parseUpstreamResponse(json), ctx)
//   or, streaming: upstream decoder.push(bytes) → events → client encoder.encode(event) → bytes.
//
// When client and upstream are the same protocol and its `passthrough` accepts the route, the client's bytes
// go up and the upstream's come back, read only for usage.

import type { UpstreamProtocol } from "../contract/index.ts";
import { anthropic } from "./anthropic/index.ts";
import { bedrockConverse } from "./bedrock-converse/index.ts";
import type { ProtocolName } from "./canonical.ts";
import { gemini } from "./gemini/index.ts";
import { openai } from "./openai/index.ts";
import { responses } from "./responses/index.ts";
import type { EmbeddingsAdapter } from "./embeddings.ts";
import type { ProtocolAdapter, UpstreamAdapter } from "./types.ts";

export type * from "./canonical.ts";
export type * from "./types.ts";
export type * from "./embeddings.ts";
export { DEFAULT_ANTHROPIC_MAX_TOKENS, REASONING_BUDGET } from "./shared.ts";
export { ANTHROPIC_VERSION } from "./anthropic/index.ts";
export { openai, anthropic, gemini, responses };

export const protocols: Readonly<Record<ProtocolName, ProtocolAdapter>> = {
  openai,
  anthropic,
  gemini,
  "openai-responses": responses,
};

/** In the order a protocol-neutral request (GET /v1/models) is matched against their `speaks`; OpenAI last. */
export const adapters: readonly ProtocolAdapter[] = [gemini, anthropic, responses, openai];

/** The upstream side of every wire protocol a route may speak (client protocols, and provider-only ones). */
export const upstreamAdapters: Readonly<Record<Exclude<UpstreamProtocol, "demo">, UpstreamAdapter>> = {
  ...protocols,
  "bedrock-converse": bedrockConverse,
};

/** The wire protocol a route's upstream speaks (the built-in demo upstream answers in OpenAI's). */
export const upstreamProtocolOf = (p: UpstreamProtocol): Exclude<UpstreamProtocol, "demo"> =>
  p === "demo" ? "openai" : p;

/** The upstream adapter of a route's protocol. */
export const upstreamAdapterOf = (p: UpstreamProtocol): UpstreamAdapter => upstreamAdapters[upstreamProtocolOf(p)];

/** OpenTelemetry's `gen_ai.provider.name` for a route's upstream (the demo upstream is modelgate's own). */
export const providerNameOf = (p: UpstreamProtocol): string =>
  p === "demo" ? "modelgate.demo" : upstreamAdapterOf(p).providerName;

/** The embeddings side of a route's upstream protocol; null when it makes none (nor does the demo upstream). */
export const embeddingsOf = (p: UpstreamProtocol): EmbeddingsAdapter | null =>
  p === "demo" ? null : (upstreamAdapterOf(p).embeddings ?? null);
