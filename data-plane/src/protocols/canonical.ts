// The one internal form every client protocol is parsed into and every upstream protocol is built from.
// 3 client protocols × 3 upstream protocols then need 6 translators instead of 9 pairwise ones.
// It is deliberately a superset: a field one protocol cannot express is refused by that protocol's
// builder with a 400 naming the parameter, never dropped silently.

import type { GatewayError, GatewayErrorKind } from "../errors.ts";

/** Each is a client protocol and an upstream protocol; `openai-responses` is the OpenAI Responses API. */
export type ProtocolName = "openai" | "anthropic" | "gemini" | "openai-responses";

export interface TextPart {
  type: "text";
  text: string;
}

export type ImageSource =
  { kind: "url"; url: string; detail?: string } | { kind: "base64"; mediaType: string; data: string };

export interface ImagePart {
  type: "image";
  source: ImageSource;
}

/** Model reasoning. The signature is opaque and only meaningful to the vendor that produced it. */
export interface ThinkingPart {
  type: "thinking";
  text: string;
  signature?: string;
}

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments object, exactly as OpenAI carries it. */
  arguments: string;
  /** Gemini's thoughtSignature on a functionCall part; it must be sent back with the call. */
  signature?: string;
}

export interface ToolCallPart extends ToolCall {
  type: "tool_call";
}

export type UserPart = TextPart | ImagePart;
/** Ordered, because Anthropic and Gemini interleave thinking, text and calls and clients may rely on it. */
export type AssistantPart = TextPart | ThinkingPart | ToolCallPart;

export interface UserMessage {
  role: "user";
  content: UserPart[];
}

export interface AssistantMessage {
  role: "assistant";
  content: AssistantPart[];
}

export interface ToolMessage {
  role: "tool";
  toolCallId: string;
  /** Known when the client protocol carries it (Gemini); otherwise resolved from the matching call. */
  name?: string;
  content: UserPart[];
  isError?: boolean;
}

/**
 * A system or developer instruction in the middle of a conversation (Claude Code's environment note). Leading
 * ones are hoisted into CanonicalRequest.system; these stay in place, each upstream writing its best equivalent
 * (see translation.ts).
 */
export interface SystemMessage {
  role: "system";
  text: string;
}

export type CanonicalMessage = UserMessage | AssistantMessage | ToolMessage | SystemMessage;

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
}

export type ToolChoice = { type: "auto" } | { type: "none" } | { type: "required" } | { type: "tool"; name: string };

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

export type ReasoningEffort = "minimal" | "low" | "medium" | "high";

/**
 * enabled=false asks for no reasoning. With enabled=true, effort and/or budgetTokens may be set;
 * neither set means "let the model decide" (Anthropic adaptive, Gemini thinkingBudget -1).
 */
export interface ReasoningConfig {
  enabled: boolean;
  effort?: ReasoningEffort;
  budgetTokens?: number;
  /**
   * The client parameter this came from when it is an effort hint rather than a request for reasoning
   * (Anthropic's output_config.effort): toward a model without reasoning it is dropped and named, not sent.
   */
  hint?: string;
}

/** A tool the vendor runs (web search, URL fetch, code execution …), as the client offered it. */
export interface HostedTool {
  /** The translation table's row (`tools[]: web_search_*`). */
  param: string;
  /** The tool as named in the dropped list when it is removed (`tools[].web_search`). */
  name: string;
  /** What it does, for an upstream that has a native tool of that kind. */
  kind: "web_search" | "web_fetch" | "code_execution" | "other";
}

export interface CanonicalRequest {
  /** The model name the client asked for (the gateway maps it to an upstream model). */
  model: string;
  /** System and developer instructions, in order. Interleaved system messages are hoisted here. */
  system: string[];
  messages: CanonicalMessage[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  stop?: string[];
  temperature?: number;
  topP?: number;
  topK?: number;
  /** Includes reasoning tokens (OpenAI max_completion_tokens, Anthropic max_tokens, Gemini maxOutputTokens). */
  maxOutputTokens?: number;
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningConfig;
  n?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  logprobs?: boolean;
  /** End-user id for abuse tracking (OpenAI `user`, Anthropic `metadata.user_id`). */
  user?: string;
  stream: boolean;
  /** OpenAI clients only get a usage chunk when they ask for it. */
  streamIncludeUsage?: boolean;
  /**
   * Client parameters that no other protocol carries (OpenAI `logit_bias`, Anthropic `context_management`, …),
   * by the client's name for them: each translation does what translation.ts's table says (drop and name, or
   * refuse). An upstream of the client's own protocol gets the client's body as it is.
   */
  untranslatable?: string[];
  /** Top-level fields the client's parser does not know: dropped in a translation, and named. */
  unknown?: string[];
  /** Tools the vendor runs, offered by the client: native upstream or removed and named (translation.ts). */
  hostedTools?: HostedTool[];
  /** The client's protocol (set by its parser): which of translation.ts's tables applies. */
  protocol?: ProtocolName;
}

export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "error";

/**
 * Token counts in one convention, whatever the upstream reported (see docs/billing.md, "Token classes"):
 * promptTokens counts every input token once, cache reads and cache writes included (OpenAI's definition),
 * so the uncached input is promptTokens − cachedTokens − cacheWrite5mTokens − cacheWrite1hTokens.
 * completionTokens counts every output token once, reasoning included.
 */
export interface Usage {
  /** All input tokens, cache reads and writes included. */
  promptTokens: number;
  /** All output tokens, reasoning included. */
  completionTokens: number;
  /** The part of completionTokens spent on reasoning (billed as output). */
  reasoningTokens: number;
  /** Input tokens read from a prompt cache (part of promptTokens). */
  cachedTokens: number;
  /** Input tokens written to a prompt cache kept 5 minutes (Anthropic; part of promptTokens). Absent: 0. */
  cacheWrite5mTokens?: number;
  /** Input tokens written to a prompt cache kept 1 hour (Anthropic; part of promptTokens). Absent: 0. */
  cacheWrite1hTokens?: number;
}

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cachedTokens: 0 });

export interface CanonicalResponse {
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
  content: AssistantPart[];
  finishReason: FinishReason;
  /** The stop sequence that ended generation, when the upstream says which. */
  stopSequence?: string | null;
  usage: Usage;
}

/**
 * Streams are normalised to these events. Tool calls are indexed by their order among the tool calls
 * of the answer (0, 1, …), independent of any upstream block numbering.
 */
export type CanonicalStreamEvent =
  | { type: "start"; id: string; model: string; created: number; usage?: Usage }
  | { type: "text"; text: string }
  | { type: "thinking"; text: string }
  | { type: "thinking_signature"; signature: string }
  | { type: "tool_call_start"; index: number; id: string; name: string; signature?: string }
  | { type: "tool_call_delta"; index: number; arguments: string }
  /** Cumulative: the latest usage event replaces earlier ones. */
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: FinishReason; stopSequence?: string | null }
  | { type: "error"; error: GatewayError }
  /** The upstream stream is complete; encoders write their closing frames. */
  | { type: "end" };

/** A vendor error body reduced to what is needed to re-shape it for the client. */
export interface UpstreamErrorInfo {
  kind: GatewayErrorKind;
  code: string;
  message: string;
  param?: string | null;
}
