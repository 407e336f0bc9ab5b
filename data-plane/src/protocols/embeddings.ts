// Embeddings in one internal form, like the chat canonical form: each client protocol is parsed into it and
// each upstream protocol built from it, so OpenAI /v1/embeddings and Gemini :embedContent translate both ways.
// A protocol that makes embeddings says so with an `embeddings` member on its adapter (see types.ts); the
// handler (data-plane/src/embeddings) knows no protocol by name.

import { GatewayError } from "../errors.ts";
import type { ClientRoute } from "./types.ts";

export interface EmbeddingRequest {
  /** the model the client asked for */
  model: string;
  /** the texts, in order; one vector comes back for each */
  inputs: string[];
  /** a shorter vector (OpenAI `dimensions`, Gemini `outputDimensionality`) */
  dimensions?: number;
  /**
   * Client parameters that change the vectors and that only the client's own protocol carries (Gemini
   * `taskType`, OpenAI token-id input …). An upstream of the same protocol gets them; a translation refuses.
   */
  untranslatable?: string[];
}

export interface EmbeddingResult {
  vectors: number[][];
  /** input tokens as the upstream counted them; null when it reports none (Gemini) */
  promptTokens: number | null;
}

/** What to send upstream: path relative to the route's base URL, and the body. */
export interface EmbeddingUpstreamRequest {
  path: string;
  body: Record<string, unknown>;
}

/**
 * One client's embeddings request, parsed: the canonical request, and how to answer it in the client's own
 * shape (which may depend on the request: OpenAI's `encoding_format`, Gemini's single or batch method).
 */
export interface EmbeddingClientCall {
  readonly request: EmbeddingRequest;
  /**
   * Toward an upstream of the client's own protocol: where the client's body goes, and (for a route that
   * renames the model) that body with the upstream's name in it. Unrenamed, the client's bytes go as they are.
   */
  passthroughPath(upstreamModel: string): string;
  renamedBody(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /** A same-protocol upstream's answer under another model name, for the client (its model name put back). */
  relayRenamed(text: string, parsed: Record<string, unknown>): string;
  /** A translated answer in the client's shape; `promptTokens` is the upstream's count or the gateway's. */
  render(result: EmbeddingResult, promptTokens: number): Record<string, unknown>;
}

/** A protocol's embeddings: its client side (routes with op "embed") and its upstream side. */
export interface EmbeddingsAdapter {
  /** `route` is what the adapter's "embed" endpoint matched (Gemini: the model and method from the path). */
  parseClientRequest(body: unknown, route: ClientRoute): EmbeddingClientCall;
  /** Canonical → this protocol's upstream request; refuses what only the client's own protocol carries. */
  buildUpstreamRequest(req: EmbeddingRequest, upstreamModel: string): EmbeddingUpstreamRequest;
  /** This protocol's answer → vectors (and its token count, when it gives one); throws on a body it cannot read. */
  parseUpstreamResponse(body: unknown): EmbeddingResult;
}

export const badEmbeddingAnswer = (): GatewayError =>
  new GatewayError("upstream", "upstream_bad_response", "The upstream answered embeddings the gateway cannot read.");
