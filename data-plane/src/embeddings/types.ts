// Embeddings in one internal form, like the chat canonical form: each client protocol is parsed into it and
// each upstream protocol built from it, so OpenAI /v1/embeddings and Gemini :embedContent translate both ways.

export type EmbeddingProtocol = "openai" | "gemini";

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
