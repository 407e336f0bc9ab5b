import type { RouteSnapshot } from "../contract/index.ts";
import { open } from "../crypto/secret-box.ts";
import { GatewayError } from "../errors.ts";
import { upstreamAdapterOf } from "../protocols/index.ts";
import {
  type ProtocolCall,
  type ProviderContext,
  type ProviderRequest,
  ProviderAuthError,
  providerOf,
} from "../providers/index.ts";
import { parseJsonLoose } from "../protocols/shared.ts";
import type { CallTrace } from "../telemetry/call-trace.ts";
import { endWithError } from "../telemetry/tracing.ts";
import type { AbortLike } from "./call-abort.ts";
import { isConnectError, isRetryableStatus, parseRetryAfter, withRetry } from "./retry.ts";
import type { UpstreamResponse } from "./transport.ts";
import type { DataPlaneOptions } from "../server/context.ts";

/** What to send to one route: the protocol's path (relative to its version prefix), the body, extra headers. */
export type Outgoing = Omit<ProtocolCall, "op" | "stream"> & Partial<Pick<ProtocolCall, "op" | "stream">>;

/** A 2xx answer; anything else is thrown as a GatewayError. */
export interface Answer {
  route: RouteSnapshot;
  upstream: UpstreamResponse;
  /** closes the breaker ticket once the body is read (a broken stream counts against the upstream) */
  settle(ok: boolean): void;
}

const opened = new Map<string, string>();

/** Opens an upstream credential once per ciphertext; the plaintext lives only in this process's memory. */
function openSealed(opts: DataPlaneOptions, sealed: string): string {
  let plain = opened.get(sealed);
  if (plain === undefined) {
    plain = open(opts.masterKey, sealed);
    if (opened.size > 1000) opened.clear();
    opened.set(sealed, plain);
  }
  return plain;
}

const parsedSecrets = new Map<string, Readonly<Record<string, string>>>();

/** What providers may read of the gateway (their route's secrets), one per data plane. */
const contexts = new WeakMap<DataPlaneOptions, ProviderContext>();
function providerContext(opts: DataPlaneOptions): ProviderContext {
  let ctx = contexts.get(opts);
  if (ctx === undefined) {
    ctx = {
      apiKey: (route) => (route.apiKeyEnc ? openSealed(opts, route.apiKeyEnc) : null),
      secrets: (route) => {
        const sealed = route.secretsEnc;
        if (!sealed) return {};
        let s = parsedSecrets.get(sealed);
        if (s === undefined) {
          s = Object.freeze(JSON.parse(openSealed(opts, sealed)) as Record<string, string>);
          if (parsedSecrets.size > 1000) parsedSecrets.clear();
          parsedSecrets.set(sealed, s);
        }
        return s;
      },
      logger: opts.logger,
    };
    contexts.set(opts, ctx);
  }
  return ctx;
}

/**
 * Tries the routes in order until one answers 2xx: each route gets retries with backoff on connect errors,
 * 429 and 5xx (honouring Retry-After), then the next route takes over. All of this happens before the
 * first byte reaches the client. A route whose circuit breaker is open is skipped. Failures are thrown as
 * GatewayErrors for the caller to render in the client's protocol.
 */
export async function callUpstream(
  opts: DataPlaneOptions,
  routes: RouteSnapshot[],
  build: (route: RouteSnapshot) => Outgoing,
  signal: AbortLike,
  /** whose call this is: the breakers count failures per account as well as per upstream */
  accountId: string,
  trace: CallTrace | null = null,
  /** the client left but the call goes on (a non-streamed answer still awaited): a failure is not retried */
  clientGone: () => boolean = () => false,
  /**
   * what keeps one conversation on one key of a route's key pool (a hash of its opening, a prompt_cache_key):
   * the key is chosen among the route's healthy keys by weighted rendezvous hashing on it, so the provider's
   * prompt cache hits and a key leaving moves only its own share; null: weighted random
   */
  affinity: string | null = null,
): Promise<Answer> {
  void affinity;
  let lastFailure: unknown = null;
  let skipped = 0;
  for (const route of routes) {
    const built = build(route);
    const call: ProtocolCall = { ...built, op: built.op ?? "generate", stream: built.stream ?? false };
    const provider = providerOf(route.provider);
    let prepared: ProviderRequest;
    try {
      if (provider === null) throw new ProviderAuthError(`unknown provider ${route.provider}`);
      const p = provider.prepare(route, call, providerContext(opts));
      prepared = p instanceof Promise ? await p : p;
    } catch (err) {
      if (!(err instanceof ProviderAuthError)) throw err;
      // The operator's credential (or provider name) does not work: the next route may; the client is told
      // the upstream's auth failed, the log says which upstream and why.
      opts.logger.error(
        { upstream: route.upstream, provider: route.provider ?? "direct", reason: err.message },
        "could not sign or authorise the call to this upstream: check its credentials",
      );
      opts.metrics.upstreamErrors.inc({ upstream: route.upstream, reason: "auth" });
      lastFailure = upstreamAuthFailed();
      continue;
    }
    const { url, headers } = prepared;
    const transport = route.protocol === "demo" ? opts.demo : opts.transport;
    let tickets = 0;
    const outcome = await withRetry<Answer>(
      async () => {
        // Nobody waits for another try: the client left (only the attempt under way is still awaited).
        if (clientGone()) return { ok: false, retryable: false, failure: clientClosed() };
        const ticket = opts.breakers.acquire(route.upstream, accountId, Date.now());
        if (ticket === null) return { ok: false, retryable: false, failure: new BreakerOpen(route.upstream) };
        tickets++;
        const attempt = trace?.attempt(route, url, tickets, headers);
        try {
          const upstream = await transport.send({
            url,
            headers: attempt ? attempt.headers : headers,
            body: prepared.body,
            signal,
            connectTimeoutMs: route.connectTimeoutMs,
            firstByteTimeoutMs: route.firstByteTimeoutMs,
            idleTimeoutMs: route.idleTimeoutMs,
            limits: opts.answerLimits,
          });
          attempt?.span.setAttribute("http.response.status_code", upstream.status);
          if (upstream.status >= 200 && upstream.status < 300) {
            attempt?.span.end();
            let settled = false;
            return {
              ok: true,
              value: {
                route,
                upstream: provider.answer ? provider.answer(route, call, upstream) : upstream,
                settle: (ok) => {
                  if (settled) return;
                  settled = true;
                  if (ok) ticket.success(Date.now());
                  else ticket.failure(Date.now(), "response");
                },
              },
            };
          }
          const retryable = isRetryableStatus(upstream.status);
          if (retryable) ticket.failure(Date.now(), "response");
          else ticket.success(Date.now()); // a 4xx is the request's fault, not the upstream's
          opts.metrics.upstreamErrors.inc({ upstream: route.upstream, reason: String(upstream.status) });
          const failure = new UpstreamStatus(route, upstream, call.path);
          if (attempt) endWithError(attempt.span, failure, String(upstream.status));
          if (retryable) await failure.drain();
          return { ok: false, retryable, failure, retryAfterMs: parseRetryAfter(upstream.headers, Date.now()) };
        } catch (err) {
          if (attempt)
            endWithError(attempt.span, err, timeoutCode(err) ?? (isConnectError(err) ? "connect" : "network"));
          if (signal.aborted) {
            ticket.cancel();
            return { ok: false, retryable: false, failure: err };
          }
          // An exception of the gateway's own (no network error code) says nothing about the upstream.
          if (!isNetworkError(err)) {
            ticket.cancel();
            return { ok: false, retryable: false, failure: new OwnFault(err) };
          }
          ticket.failure(Date.now(), isConnectError(err) ? "connect" : "response");
          const timedOut = timeoutCode(err) !== null;
          opts.metrics.upstreamErrors.inc({
            upstream: route.upstream,
            reason: timedOut ? "timeout" : isConnectError(err) ? "connect" : "network",
          });
          // A stalled upstream is not asked again (the client would wait a timeout per try); the next route is.
          return { ok: false, retryable: !timedOut, failure: err };
        }
      },
      opts.retry,
      { signal },
    );
    if (outcome.ok) return outcome.value;
    lastFailure = outcome.failure;
    if (lastFailure instanceof UpstreamStatus) await lastFailure.drain();
    if (lastFailure instanceof BreakerOpen && tickets === 0) skipped++;
    if (signal.aborted || clientGone()) throw clientClosed();
    if (lastFailure instanceof OwnFault) throw lastFailure.cause;
    // A request the upstream refused as invalid would be refused by the next route too.
    if (lastFailure instanceof UpstreamStatus && !isRetryableStatus(lastFailure.upstream.status)) break;
  }
  if (signal.aborted) throw clientClosed();
  if (lastFailure instanceof UpstreamStatus) throw await lastFailure.toGatewayError(opts.logger);
  if (lastFailure instanceof GatewayError) throw lastFailure;
  if (skipped === routes.length) {
    throw new GatewayError(
      "unavailable",
      "upstream_unavailable",
      "Every upstream of this model is failing right now and is taken out of service for a moment; retry shortly.",
      null,
      { "retry-after": "5" },
    );
  }
  const code = timeoutCode(lastFailure);
  if (code) throw new GatewayError("timeout", "upstream_timeout", "The upstream did not answer in time.");
  throw new GatewayError("upstream", "upstream_unreachable", "The upstream could not be reached.");
}

/** A failure of the gateway's own code while calling an upstream: surfaced as is, never held against the upstream. */
class OwnFault extends Error {
  constructor(override readonly cause: unknown) {
    super("gateway fault while calling the upstream");
  }
}

/** Network failures carry a system or undici error code (on the error or its causes); our own bugs do not. */
function isNetworkError(err: unknown): boolean {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^(E[A-Z_]+|UND_ERR_\w+)$/.test(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

class BreakerOpen extends Error {
  constructor(upstream: string) {
    super(`circuit open for ${upstream}`);
  }
}

class UpstreamStatus extends Error {
  private text: Promise<string> | null = null;
  constructor(
    readonly route: RouteSnapshot,
    readonly upstream: UpstreamResponse,
    /** the path called, relative to the base URL (logged when the upstream has no such path) */
    readonly path: string,
  ) {
    super(`upstream answered ${upstream.status}`);
  }
  /** Reads the error body once (retried attempts must free their sockets). */
  drain(): Promise<string> {
    this.text ??= this.upstream.text().catch(() => "");
    return this.text;
  }

  /**
   * The upstream's refusal in the gateway's terms, to be re-shaped into the client's protocol. A request the
   * upstream found invalid keeps its status and message; the upstream's own troubles (its credential, its
   * rate limit, its outages) are the gateway's 502/429, never the client's 401.
   */
  async toGatewayError(logger: DataPlaneOptions["logger"]): Promise<GatewayError> {
    const text = await this.drain();
    const own =
      providerOf(this.route.provider)?.parseError?.(this.upstream.status, this.upstream.headers, text) ?? null;
    const status = own?.status ?? this.upstream.status;
    const info = own ?? upstreamAdapterOf(this.route.protocol).parseUpstreamError(status, text);
    // The customer never learns which of the operator's upstreams this was, nor what it said about itself
    // (its account, its deployment names): that goes to the log. A request the upstream found invalid keeps
    // the upstream's explanation, which is about the customer's own request.
    if (status === 429 || status === 401 || status === 403 || status === 404 || status >= 500) {
      logger.warn(
        { upstream: this.route.upstream, status, upstreamMessage: info.message.slice(0, 500) },
        "upstream refused the call",
      );
    }
    if (status === 429)
      return new GatewayError(
        "rate_limit",
        "upstream_rate_limited",
        "The upstream is rate limiting the gateway; retry shortly.",
      );
    if (status === 401 || status === 403) return upstreamAuthFailed();
    if (status >= 500) return new GatewayError("upstream", "upstream_error", `The upstream failed (HTTP ${status}).`);
    if (status === 404) {
      if (knowsNoModel(info, text, this.route.upstreamModel, this.path)) {
        return new GatewayError(
          "upstream",
          "upstream_model_not_found",
          "The upstream does not know the model this one is routed to; the operator has been told.",
        );
      }
      // Not the model: the path. The operator's base URL (or the protocol chosen for it) does not fit the upstream.
      logger.error(
        {
          upstream: this.route.upstream,
          protocol: this.route.protocol,
          baseUrl: this.route.baseUrl,
          path: this.path,
          status,
        },
        "upstream has no such path: check this upstream's baseUrl and protocol in the configuration",
      );
      return new GatewayError(
        "upstream",
        "upstream_misconfigured",
        "The gateway's configuration for this model's upstream is wrong (the upstream has no such endpoint); the operator has been told.",
      );
    }
    if (status === 413) return new GatewayError("too_large", "request_too_large", info.message);
    return new GatewayError(
      "invalid_request",
      info.code || "upstream_invalid_request",
      info.message,
      info.param ?? null,
      {},
      status >= 400 && status < 500 ? status : 400,
    );
  }
}

/**
 * Whether an upstream's 404 is about the model rather than the path. Vendors answer an unknown model in
 * their JSON error shape and name it (OpenAI's code model_not_found, Anthropic's "model: x", Gemini's
 * "models/x is not found"); an unknown path gets "Invalid URL (POST /messages)", a bare "Not Found", or a
 * front end's HTML page.
 */
export function knowsNoModel(
  info: { code: string; message: string },
  body: string,
  upstreamModel: string,
  path: string,
): boolean {
  if (parseJsonLoose(body) === undefined) return false;
  // "Method not found: /v1beta/gemini/models/x:generateContent" names the model only as part of the path.
  if (info.message.includes(path.split("?")[0]!)) return false;
  return info.code === "model_not_found" || (upstreamModel !== "" && info.message.includes(upstreamModel));
}

const timeoutCode = (err: unknown): string | null => {
  const code = (err as { code?: string } | null)?.code;
  return code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT"
    ? "timeout"
    : null;
};

export const clientClosed = () =>
  new GatewayError("invalid_request", "client_closed", "The client closed the connection.", null, {}, 499);

/** The upstream refused the gateway's credential, or the gateway could not sign or authorise the call. */
const upstreamAuthFailed = () =>
  new GatewayError(
    "upstream",
    "upstream_auth_failed",
    "The upstream rejected the gateway's credential; the operator has been told.",
  );
