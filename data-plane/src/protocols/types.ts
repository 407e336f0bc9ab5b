// The shapes shared by every protocol adapter (see index.ts for the registry). An adapter is everything the
// server needs to know about one protocol: the client routes it answers and where their key goes, its
// translators to and from the canonical form, its upstream paths and headers, its same-protocol relay (bytes
// passed through, read for usage), its model list and its error frames. server/ holds no per-protocol switch.

import type { ModelSnapshot } from "../contract/index.ts";
import type { GatewayError, RenderedError } from "../errors.ts";
import type { EmbeddingsAdapter } from "./embeddings.ts";
import type {
  CanonicalRequest,
  CanonicalResponse,
  CanonicalStreamEvent,
  ProtocolName,
  UpstreamErrorInfo,
  Usage,
} from "./canonical.ts";

/** What to send upstream. `path` is relative to the route's base URL; auth headers are added separately. */
export interface UpstreamRequest {
  path: string;
  /** JSON-serialisable body; the caller stringifies it once. */
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** Client parameters left out (hints with no equivalent, tools the upstream cannot run), by the client's name. */
  dropped?: string[];
}

/**
 * What the route's provider declares about its API that changes the body a protocol writes (see
 * providers/types.ts, Provider): read by the request builders and by the same-protocol passthrough alike.
 */
export interface UpstreamTraits {
  /**
   * The upstream's OpenAI Chat Completions streams end with their usage unasked, and its API refuses
   * `stream_options` (Mistral): the field is never written, and a client's is not passed on.
   */
  streamUsageUnasked?: boolean;
}

/** How to build one upstream request. */
export interface BuildOptions extends UpstreamTraits {
  stream: boolean;
  /** The model is `strict`: what would be dropped (hints, hosted tools) is refused instead. */
  strict?: boolean;
  /** Whether the model is configured with reasoning (an effort hint is sent only then); undefined: unknown. */
  reasoning?: boolean;
}

export interface ClientRoute {
  model?: string;
  stream?: boolean;
  /** Gemini streaming without `alt=sse`: one JSON array, streamed element by element */
  jsonArray?: boolean;
  /** a resource id named in the path (GET /v1/responses/{id}) */
  id?: string;
  /** the method named in the path (Gemini's `:embedContent` or `:batchEmbedContents`) */
  method?: string;
}

/** Where a client protocol puts the API key besides `Authorization: Bearer`. */
export type KeySource = "authorization" | "x-api-key" | "x-goog-api-key" | "query";

/**
 * What the server does for a client route. Generation is the request path every protocol shares;
 * the others are protocol-neutral operations that only some protocols expose.
 */
export type ClientOperation = "generate" | "count_tokens" | "embed" | StoredOperation;
/** Operations on kept answers of a stateful protocol (the Responses API's /v1/responses/{id}…). */
export type StoredOperation = "retrieve" | "delete" | "list_input";

export interface ClientEndpoint {
  method: "GET" | "POST" | "DELETE";
  /** As the unknown-path 404 lists it: `POST /v1beta/models/{model}:generateContent`. */
  label: string;
  op: ClientOperation;
  /** The route's parameters when the path (and query) belong to this endpoint, else null. */
  match(path: string, query: URLSearchParams | null): ClientRoute | null;
}

export interface ClientResponseContext {
  /** The model name the client asked for, echoed back instead of the upstream's name. */
  model: string;
  requestId: string;
  /** The client's parsed body, for protocols that echo request fields in their answer (Responses). */
  request?: Record<string, unknown>;
  /** Stateful protocols: keeps the answer (already rendered) before the client is told it is complete. */
  commit?: (rendered: Record<string, unknown>) => Promise<void>;
}

/** Turns an upstream byte stream into canonical events. One instance (one state object) per stream. */
export interface StreamDecoder {
  push(chunk: Uint8Array | string): CanonicalStreamEvent[];
  /** Call when the upstream body ends; reports a truncated stream as an error event. */
  end(): CanonicalStreamEvent[];
}

/** Turns canonical events into the client protocol's exact framing. One instance per stream. */
export interface StreamEncoder {
  /** The frames for one event; "" when the event produces nothing (yet). */
  encode(event: CanonicalStreamEvent): string;
  /**
   * Frames held back until the answer is committed (the Responses API's `response.completed`, sent only once
   * the response is stored); called once after the last event.
   */
  close?(): Promise<string>;
}

/** A same-protocol stream read on its way through: the bytes to send on, and what they say about usage. */
export interface PassthroughStream {
  /** What to write for this chunk: text, or bytes (the upstream's own where nothing changed). */
  push(chunk: Uint8Array): string | Uint8Array;
  end(): string;
  readonly usage: Usage | null;
  /** characters of output delivered, for counting when the upstream reports no usage */
  readonly deliveredChars: number;
  /** the upstream reported an error (re-shaped with the request id, and nothing follows it) */
  readonly error: GatewayError | null;
  /** the upstream's stream reached its proper end */
  readonly complete: boolean;
  /** provider-side ids the stream has handed out so far, each once, in order (a stateful protocol's) */
  readonly providerIds?: readonly string[];
  /**
   * An error the gateway writes into this stream (the upstream broke off): the adapter's error frame, in the
   * stream's own sequence where the protocol numbers its events (Responses: the next `sequence_number`).
   */
  errorFrame(err: GatewayError): string;
}

/**
 * What the gateway itself reads of a request whatever route it takes: the model (admission, routing, billing)
 * and whether the answer streams. A same-protocol call reads nothing more; the upstream validates the rest.
 * A CanonicalRequest is one.
 */
export interface RequestHead {
  model: string;
  stream: boolean;
  /** OpenAI clients only get a usage chunk when they ask for it. */
  streamIncludeUsage?: boolean;
}

/** Client and upstream speak this protocol: the client's bytes go up, the upstream's come back, read for usage. */
export interface Passthrough {
  /**
   * Reads the request's head, validating only what it reads: a body bound for an upstream of its own protocol
   * is that upstream's to judge (unknown roles, fields, block and tool types pass).
   */
  head(body: Record<string, unknown>, route?: ClientRoute): RequestHead;
  /** Client headers sent on to the upstream (the vendor's own: beta flags, API version); never credentials. */
  forwardsHeader?(name: string): boolean;
  /** Whether this route can take the client's bytes (absent: always); otherwise the call is translated. */
  accepts?(req: RequestHead, upstreamModel: string, route?: ClientRoute): boolean;
  /**
   * The body to send: the client's bytes when nothing needs changing, else with the upstream's model name (and
   * what `upstream`, the route's provider's traits, requires of it).
   */
  body(
    raw: Buffer,
    parsed: Record<string, unknown>,
    req: RequestHead,
    upstreamModel: string,
    upstream?: UpstreamTraits,
  ): string | Buffer;
  path(upstreamModel: string, stream: boolean): string;
  /**
   * A non-streamed answer: the bytes to send (the client's model name put back) and its usage, `exact` when the
   * upstream reported it; otherwise the gateway's count (`estimatedPromptTokens` for the prompt), which the
   * client gets too where the protocol carries usage.
   */
  readJson(
    text: string,
    clientModel: string,
    estimatedPromptTokens: number,
  ): { body: string; usage: Usage; exact: boolean; deliveredChars: number; providerIds?: string[] };
  /**
   * Provider-side ids the request names (a stateful protocol's: previous_response_id, item ids), which the
   * provider would resolve in whatever it keeps for the operator's account: each must be one this tenant was given.
   */
  namedIds?(body: Record<string, unknown>): { id: string; param: string }[];
  createStream(clientModel: string, requestId: string, req: RequestHead): PassthroughStream;
}

/** Where stateful protocols keep earlier answers (see data-plane/src/conversations). */
export interface ConversationStore {
  /** The record and the size it is kept at (sealed), which is what reading it costs. */
  get(accountId: string, id: string): Promise<{ record: Record<string, unknown>; bytes: number } | null>;
  put(accountId: string, id: string, record: Record<string, unknown>): Promise<void>;
  delete(accountId: string, id: string): Promise<boolean>;
}

/** A stateful protocol's view of one request: what it refers to and what to keep of its answer. */
export interface ClientSession {
  /** The body refers to earlier answers (previous_response_id, item references). */
  readonly refersToState: boolean;
  /** The body without its references, so that it parses (and is admitted) before any state is read. */
  readonly withoutState: Record<string, unknown>;
  /** The body with every reference replaced by what it refers to; throws a 400 when that cannot be done. */
  expand(): Promise<Record<string, unknown>>;
  /** Once expanded: about how many bytes the expanded body is (null before, or when nothing was expanded). */
  readonly expandedBytes?: number | null;
  /** Keeps the rendered answer (with the expanded input) when the client asked for it to be kept. */
  commit?: (rendered: Record<string, unknown>) => Promise<void>;
}

/**
 * The upstream half of a protocol: how to build a request of it from the canonical form and read its answers.
 * Every client protocol has one; a wire protocol only some provider speaks (Bedrock's Converse) has only this.
 */
export type UpstreamAdapter = Pick<
  ProtocolAdapter,
  | "basePath"
  | "buildUpstreamRequest"
  | "authHeaders"
  | "parseUpstreamResponse"
  | "createUpstreamStreamDecoder"
  | "parseUpstreamError"
  | "providerName"
  | "embeddings"
>;

export interface ProtocolAdapter {
  readonly name: ProtocolName;
  // client side
  readonly endpoints: readonly ClientEndpoint[];
  /** Header (or query) the key may come in besides `Authorization: Bearer`. */
  readonly keySources: readonly KeySource[];
  /** Whether a protocol-neutral request (GET /v1/models) speaks this protocol, from its headers and query. */
  speaks?(headers: Record<string, string | string[] | undefined>, path: string, query: URLSearchParams | null): boolean;
  /** Gemini carries the model and streaming in the URL, so the server passes them in `route`. */
  parseClientRequest(body: unknown, route?: ClientRoute): CanonicalRequest;
  renderClientResponse(res: CanonicalResponse, ctx: ClientResponseContext): Record<string, unknown>;
  createClientStreamEncoder(
    ctx: ClientResponseContext & { includeUsage?: boolean; jsonArray?: boolean },
  ): StreamEncoder;
  renderError(err: GatewayError, requestId: string): RenderedError;
  /** One error as a frame of this protocol's stream. */
  errorFrame(err: GatewayError, requestId: string): string;
  /** Content type of a stream (Gemini's JSON-array streaming is not SSE). */
  streamContentType?(route: ClientRoute | undefined): string | undefined;
  renderModelList(models: ModelSnapshot[]): unknown;
  renderModel(model: ModelSnapshot): unknown;
  /** Who a request is for, in this protocol's own fields (the usage log's end user and "key=value" tag map). */
  attributionFields(body: Record<string, unknown>): { endUser: unknown; tags: unknown };
  /** Stateful protocols: the answer to an operation on a kept record (found, or just deleted). */
  renderStored?(
    op: StoredOperation,
    id: string,
    record: Record<string, unknown>,
    query: URLSearchParams | null,
  ): unknown;
  /** Stateful protocols (Responses): reads what a request refers to and how its answer is kept. */
  openSession?(
    body: Record<string, unknown>,
    store: ConversationStore | null,
    accountId: string,
    limits: { maxBytes: number; bodyBytes: number },
  ): ClientSession;
  // upstream side
  /** The version segment the vendor's paths go after, added to a base URL given as a bare host (`/v1`). */
  readonly basePath: string;
  buildUpstreamRequest(req: CanonicalRequest, upstreamModel: string, opts: BuildOptions): UpstreamRequest;
  authHeaders(apiKey: string): Record<string, string>;
  parseUpstreamResponse(body: unknown): CanonicalResponse;
  createUpstreamStreamDecoder(): StreamDecoder;
  parseUpstreamError(status: number, body: string): UpstreamErrorInfo;
  /** Same protocol on both sides (absent: always translate). */
  readonly passthrough?: Passthrough;
  /** OpenTelemetry's `gen_ai.provider.name` for an upstream of this protocol (the convention's well-known value). */
  readonly providerName: string;
  // embeddings
  /**
   * The protocol's embeddings, client side (its endpoints with op "embed") and upstream side; absent when the
   * protocol makes none (a route of such an upstream cannot serve an embedding model).
   */
  readonly embeddings?: EmbeddingsAdapter;
}
