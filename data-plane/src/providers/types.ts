// A provider is who serves an upstream: where its endpoints are, how a call proves who the gateway is, and
// the quirks of its answers. The protocol (protocols/) is the wire format the body is written in; the provider
// puts that body on the provider's own URL with the provider's own auth. Azure OpenAI speaks OpenAI's protocol
// on other paths with an `api-key`; Bedrock speaks Anthropic's on `/model/{id}/invoke` signed with SigV4 and
// answers streams in AWS's binary event stream; Vertex speaks Gemini's and Anthropic's under a project path
// with an OAuth2 bearer. Everything before (parsing, translation, admission) and after (relay, usage) is
// shared.

import type { RouteSnapshot, UpstreamProtocol } from "../contract/index.ts";
import type { UpstreamErrorInfo } from "../protocols/index.ts";
import type { UpstreamResponse } from "../upstreams/transport.ts";

/** A request in the route's wire protocol, as the protocol layer built it. */
export interface ProtocolCall {
  /** the protocol's path, relative to its version prefix (`/chat/completions`, `/models/m:generateContent`) */
  path: string;
  body: string | Buffer;
  headers?: Record<string, string> | undefined;
  /** what the call is: generation or embeddings (providers whose paths do not follow the protocol's need it) */
  op: "generate" | "embed";
  stream: boolean;
}

/** The HTTP request a provider makes of a protocol call. */
export interface ProviderRequest {
  url: string;
  headers: Record<string, string>;
  body: string | Buffer;
}

/** What a provider may read of the gateway: the route's secrets, opened once per sealed value. */
export interface ProviderContext {
  /** the route's credential, opened: the pool key chosen for this attempt, else `apiKeyEnc` (null: none) */
  apiKey(route: RouteSnapshot): string | null;
  /**
   * the id of the pool key this context's apiKey() yields (absent: the route's one apiKeyEnc): what a provider
   * caching anything per route that depends on the credential must cache per (route, key) instead
   */
  readonly keyId?: string;
  /** the route's `secretsEnc`, opened and parsed (empty: none configured) */
  secrets(route: RouteSnapshot): Readonly<Record<string, string>>;
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export interface Provider {
  /** its name in the configuration (`provider: bedrock`), the same as its folder's */
  readonly name: string;
  /**
   * The wire protocol a route of this provider speaks for one of its models, from the operator's `protocol`
   * (null: not given) and the provider's own model name (Bedrock: `anthropic.*` speaks Anthropic's Messages,
   * every other model Converse). Throws with a message for the operator when the pair cannot work.
   */
  protocolFor(upstreamModel: string, configured: UpstreamProtocol | null): UpstreamProtocol;
  /** The endpoint used when the operator gives no `baseUrl` (from the provider's options: region, project). */
  defaultBaseUrl(options: Readonly<Record<string, string>>): string | null;
  /** The provider's settings the operator must give (region for Bedrock, project for Vertex…). */
  readonly requiredOptions?: readonly string[];
  /** Every setting it reads (`apiVersion`, `region`, `project`, `auth`): the console shows these fields. */
  readonly options?: readonly string[];
  /** The secrets it reads besides `apiKey` (`accessKeyId`, `secretAccessKey`, `sessionToken`, `serviceAccount`). */
  readonly secrets?: readonly string[];
  /** Whether a route needs a credential configured (Ollama and vLLM run without one). */
  readonly needsKey: boolean;
  /**
   * Its OpenAI Chat Completions streams end with their usage unasked, and its API refuses `stream_options`
   * (Mistral): the OpenAI request builder never writes the field and the passthrough drops a client's
   * (UpstreamTraits, protocols/types.ts). Absent: the gateway asks for the usage chunk with
   * `stream_options.include_usage`.
   */
  readonly streamUsageUnasked?: boolean;
  /**
   * The HTTP request for a protocol call: URL, auth, and any change the provider needs in the body. Async
   * when a signature or a token is needed; throws a ProviderAuthError when the credential cannot be had.
   */
  prepare(route: RouteSnapshot, call: ProtocolCall, ctx: ProviderContext): ProviderRequest | Promise<ProviderRequest>;
  /** Re-frames a 2xx answer into the protocol's own framing (Bedrock's binary event stream → SSE). */
  answer?(route: RouteSnapshot, call: ProtocolCall, res: UpstreamResponse): UpstreamResponse;
  /**
   * A refusal in the protocol's terms where the provider answers in its own (Bedrock's `x-amzn-ErrorType`);
   * `status` replaces the HTTP status where the provider's does not say what happened. Absent or null: the
   * protocol's parser reads it.
   */
  parseError?(
    status: number,
    headers: UpstreamResponse["headers"],
    body: string,
  ): (UpstreamErrorInfo & { status?: number }) | null;
}

/** The gateway could not sign a call or obtain a token for it: the upstream's auth failed, the operator's to fix. */
export class ProviderAuthError extends Error {
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}
