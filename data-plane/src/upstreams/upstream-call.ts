import type { RouteKey, RouteSnapshot } from "../contract/index.ts";
import { open } from "../crypto/secret-box.ts";
import { GatewayError } from "../errors.ts";
import { upstreamAdapterOf } from "../protocols/index.ts";
import {
  type ProtocolCall,
  type Provider,
  type ProviderContext,
  type ProviderRequest,
  ProviderAuthError,
  providerOf,
} from "../providers/index.ts";
import { parseJsonLoose } from "../protocols/shared.ts";
import type { CallTrace } from "../telemetry/call-trace.ts";
import { endWithError } from "../telemetry/tracing.ts";
import type { AbortLike } from "./call-abort.ts";
import { chooseKey } from "./key-pool/choose.ts";
import { keyFaultOf, needsBody } from "./key-pool/classify.ts";
import { KeyHealth, keyField } from "./key-pool/health.ts";
import { RetryBudget } from "./key-pool/retry-budget.ts";
import {
  type AttemptResult,
  backoffMs,
  isConnectError,
  isRetryableStatus,
  parseRetryAfter,
  withRetry,
} from "./retry.ts";
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

/** The pool key's context: apiKey() yields that key (one object per key of a snapshot, no allocation per call). */
const keyContexts = new WeakMap<DataPlaneOptions, WeakMap<RouteKey, ProviderContext>>();
function keyContext(opts: DataPlaneOptions, key: RouteKey): ProviderContext {
  let byKey = keyContexts.get(opts);
  if (byKey === undefined) keyContexts.set(opts, (byKey = new WeakMap()));
  let ctx = byKey.get(key);
  if (ctx === undefined) {
    ctx = { ...providerContext(opts), keyId: key.id, apiKey: () => openSealed(opts, key.apiKeyEnc) };
    byKey.set(key, ctx);
  }
  return ctx;
}

/** What one attempt needs besides its number. */
interface AttemptEnv {
  opts: DataPlaneOptions;
  route: RouteSnapshot;
  call: ProtocolCall;
  provider: Provider;
  prepared: ProviderRequest;
  /** the breaker this attempt counts toward: the upstream's, or for a pool key `upstream/key` */
  breaker: string;
  accountId: string;
  signal: AbortLike;
  trace: CallTrace | null;
  clientGone: () => boolean;
  /** a pool key's field in KeyHealth: its answers' rate-limit headers are learned */
  keyField: string | null;
}

/** One try on one route (and key): the answer, or why not and whether another try may cure it. */
async function attemptOnce(e: AttemptEnv, n: number): Promise<AttemptResult<Answer> & { ticketed?: boolean }> {
  const { opts, route, call, provider, prepared, signal } = e;
  // Nobody waits for another try: the client left (only the attempt under way is still awaited).
  if (e.clientGone()) return { ok: false, retryable: false, failure: clientClosed() };
  const ticket = opts.breakers.acquire(e.breaker, e.accountId, Date.now());
  if (ticket === null) return { ok: false, retryable: false, failure: new BreakerOpen(e.breaker) };
  const { url, headers } = prepared;
  const transport = route.protocol === "demo" ? opts.demo : opts.transport;
  const attempt = e.trace?.attempt(route, url, n, headers);
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
    if (e.keyField !== null) keyHealthOf(opts).learn(e.keyField, upstream.headers, Date.now());
    if (upstream.status >= 200 && upstream.status < 300) {
      attempt?.span.end();
      let settled = false;
      return {
        ok: true,
        ticketed: true,
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
    // A pool key's 429 rests that key for its retry-after (upstream-call's key loop): counted against its breaker
    // too, a burst of calls in flight when the limit struck would open the breaker and keep the key out long
    // after its rest.
    if (upstream.status === 429 && e.keyField !== null) ticket.cancel();
    else if (retryable) ticket.failure(Date.now(), "response");
    else ticket.success(Date.now()); // a 4xx is the request's fault, not the upstream's
    opts.metrics.upstreamErrors.inc({ upstream: route.upstream, reason: String(upstream.status) });
    const failure = new UpstreamStatus(route, upstream, call.path);
    if (attempt) endWithError(attempt.span, failure, String(upstream.status));
    if (retryable) await failure.drain();
    return {
      ok: false,
      ticketed: true,
      retryable,
      failure,
      retryAfterMs: parseRetryAfter(upstream.headers, Date.now()),
    };
  } catch (err) {
    if (attempt) endWithError(attempt.span, err, timeoutCode(err) ?? (isConnectError(err) ? "connect" : "network"));
    if (signal.aborted) {
      ticket.cancel();
      return { ok: false, ticketed: true, retryable: false, failure: err };
    }
    // An exception of the gateway's own (no network error code) says nothing about the upstream.
    if (!isNetworkError(err)) {
      ticket.cancel();
      return { ok: false, ticketed: true, retryable: false, failure: new OwnFault(err) };
    }
    ticket.failure(Date.now(), isConnectError(err) ? "connect" : "response");
    const timedOut = timeoutCode(err) !== null;
    opts.metrics.upstreamErrors.inc({
      upstream: route.upstream,
      reason: timedOut ? "timeout" : isConnectError(err) ? "connect" : "network",
    });
    // A stalled upstream is not asked again (the client would wait a timeout per try); the next route is.
    return { ok: false, ticketed: true, retryable: !timedOut, failure: err };
  }
}

/** Prepares a route's request with the provider (per key for a pool); a ProviderAuthError is logged and returned. */
async function prepareFor(
  opts: DataPlaneOptions,
  route: RouteSnapshot,
  call: ProtocolCall,
  provider: Provider | null,
  ctx: ProviderContext,
): Promise<ProviderRequest | GatewayError> {
  try {
    if (provider === null) throw new ProviderAuthError(`unknown provider ${route.provider}`);
    const p = provider.prepare(route, call, ctx);
    return p instanceof Promise ? await p : p;
  } catch (err) {
    if (!(err instanceof ProviderAuthError)) throw err;
    // The operator's credential (or provider name) does not work: the next route may; the client is told
    // the upstream's auth failed, the log says which upstream and why.
    opts.logger.error(
      { upstream: route.upstream, provider: route.provider ?? "direct", key: ctx.keyId, reason: err.message },
      "could not sign or authorise the call to this upstream: check its credentials",
    );
    opts.metrics.upstreamErrors.inc({ upstream: route.upstream, reason: "auth" });
    return upstreamAuthFailed();
  }
}

/**
 * Tries the routes in order until one answers 2xx: each route gets retries with backoff on connect errors,
 * 429 and 5xx (honouring Retry-After), then the next route takes over. A route with a key pool tries its keys
 * instead (tryPool). All of this happens before the first byte reaches the client. A route whose circuit
 * breaker is open is skipped. Retries beyond the first try are bounded by the retry budget (a share of the
 * traffic). Failures are thrown as GatewayErrors for the caller to render in the client's protocol.
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
  let lastFailure: unknown = null;
  let skipped = 0;
  const budget = retryBudgetOf(opts);
  budget.call(Date.now());
  const mayRetry = () => budget.tryRetry(Date.now());
  for (const route of routes) {
    const built = build(route);
    const call: ProtocolCall = { ...built, op: built.op ?? "generate", stream: built.stream ?? false };
    const provider = providerOf(route.provider);
    if (route.keys !== undefined && route.keys.length > 0) {
      const pooled = await tryPool(opts, route, route.keys, call, provider, {
        accountId,
        signal,
        trace,
        clientGone,
        affinity,
        mayRetry,
      });
      if (pooled.ok) return pooled.value;
      lastFailure = pooled.failure;
      if (pooled.skipped) skipped++;
      if (signal.aborted || clientGone()) throw clientClosed();
      if (lastFailure instanceof OwnFault) throw lastFailure.cause;
      // Every key refused as such (401, quota): the next route's credentials may work. A request the upstream
      // refused as invalid would be refused by the next route too.
      if (!pooled.keyFault && lastFailure instanceof UpstreamStatus && !isRetryableStatus(lastFailure.upstream.status))
        break;
      continue;
    }
    const prepared = await prepareFor(opts, route, call, provider, providerContext(opts));
    if (prepared instanceof GatewayError) {
      lastFailure = prepared;
      continue;
    }
    let tickets = 0;
    const env: AttemptEnv = {
      opts,
      route,
      call,
      provider: provider!,
      prepared,
      breaker: route.upstream,
      accountId,
      signal,
      trace,
      clientGone,
      keyField: null,
    };
    const outcome = await withRetry<Answer>(
      async (n) => {
        const r = await attemptOnce(env, n);
        if (r.ticketed) tickets++;
        return r;
      },
      opts.retry,
      { signal, mayRetry },
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

type PoolOutcome =
  | { ok: true; value: Answer }
  | {
      ok: false;
      failure: unknown;
      /** every key was skipped without a call (breakers open, all resting or disabled) */
      skipped: boolean;
      /** the last failure was the key's (refused, out of quota, rate limited), not the request's */
      keyFault: boolean;
    };

/**
 * One route with a key pool. Each try takes a usable key (enabled in the snapshot, not disabled or resting
 * here or on another replica, its breaker not open) not yet tried by this call: by weight, or by rendezvous
 * hashing on the affinity. A 401/403 disables the key (it leaves the rotation for every replica, the control
 * plane records it and alerts) and the call moves to another key at once, as for 402 and insufficient_quota;
 * a 429 rests the key for its retry-after (or a backoff) and the call moves on; a 5xx or a connect failure
 * counts toward the key's own breaker and the call moves on. Once every usable key has been tried, a 5xx or
 * connect failure is retried on them with backoff, up to the retry policy's tries.
 */
async function tryPool(
  opts: DataPlaneOptions,
  route: RouteSnapshot,
  keys: readonly RouteKey[],
  call: ProtocolCall,
  provider: Provider | null,
  c: {
    accountId: string;
    signal: AbortLike;
    trace: CallTrace | null;
    clientGone: () => boolean;
    affinity: string | null;
    mayRetry: () => boolean;
  },
): Promise<PoolOutcome> {
  const health = keyHealthOf(opts);
  const fields = keyFields(route, keys);
  const tried = new Set<string>();
  const maxAttempts = Math.max(opts.retry.maxAttempts, keys.length);
  let failure: unknown = new BreakerOpen(route.upstream);
  let keyFault = false;
  /** the last key refused itself (auth, quota): it is never tried again, so moving on costs no retry budget */
  let free = false;
  let calls = 0;
  let attempts = 0;
  let again = false;
  let waitMs = 0;
  while (attempts < maxAttempts) {
    const now = Date.now();
    const usable = (k: RouteKey) => k.enabled && health.usable(fields.get(k.id)!, now);
    const weightOf = (k: RouteKey) => health.weight(fields.get(k.id)!, k.weight, now);
    let key = chooseKey(keys, (k) => !tried.has(k.id) && usable(k), weightOf, c.affinity);
    if (key === null && again) {
      // Every usable key has had its try and the last failure may pass: the same keys again, after a pause.
      key = chooseKey(keys, usable, weightOf, c.affinity);
      if (key !== null) {
        try {
          await sleepFor(Math.min(opts.retry.maxDelayMs, Math.max(waitMs, backoffMs(attempts, opts.retry))), c.signal);
        } catch {
          break;
        }
      }
    }
    if (key === null) break;
    if (calls > 0 && !free && !c.mayRetry()) break;
    free = false;
    tried.add(key.id);
    const field = fields.get(key.id)!;
    const prepared = await prepareFor(opts, route, call, provider, keyContext(opts, key));
    if (prepared instanceof GatewayError) {
      failure = prepared;
      keyFault = true;
      again = false;
      free = true;
      continue;
    }
    attempts++;
    const r = await attemptOnce(
      {
        opts,
        route,
        call,
        provider: provider!,
        prepared,
        breaker: `${route.upstream}/${key.id}`,
        accountId: c.accountId,
        signal: c.signal,
        trace: c.trace,
        clientGone: c.clientGone,
        keyField: field,
      },
      attempts,
    );
    if (r.ok) return r;
    failure = r.failure;
    if (!r.ticketed) {
      // This key's breaker is open: another key may serve; this one did not cost a call.
      attempts--;
      again = false;
      continue;
    }
    calls++;
    if (c.signal.aborted || c.clientGone() || failure instanceof OwnFault) break;
    if (failure instanceof UpstreamStatus) {
      const status = failure.upstream.status;
      const body = needsBody(status) ? await failure.drain() : "";
      const fault = keyFaultOf(status, body);
      keyFault = fault === "auth" || fault === "quota" || fault === "rate";
      again = fault === "server";
      waitMs = r.retryAfterMs ?? 0;
      const at = Date.now();
      if (fault === "auth" || fault === "quota") {
        const reason =
          status === 401
            ? "unauthorized"
            : status === 403
              ? "forbidden"
              : status === 402
                ? "payment_required"
                : "insufficient_quota";
        health.disable(route.upstream, key.id, reason, at);
        free = true;
        opts.logger.warn(
          { upstream: route.upstream, key: key.id, status, reason },
          "upstream key refused: taken out of the rotation until an operator enables it",
        );
        opts.metrics.upstreamErrors.inc({ upstream: route.upstream, reason: `key_${reason}` });
        continue;
      }
      if (fault === "rate") {
        // Rests for the provider's retry-after, else a backoff that doubles with each 429 of this call.
        const rest = r.retryAfterMs ?? Math.min(60_000, 1_000 * 2 ** Math.min(6, calls - 1));
        health.rest(route.upstream, key.id, at + rest, at);
        continue;
      }
      if (fault === "server") continue;
      // The request's own fault: another key would be refused the same way.
      await failure.drain();
      break;
    }
    // A network failure: retryable unless it timed out (the client would wait a timeout per try).
    keyFault = false;
    again = r.retryable;
    waitMs = 0;
    if (!r.retryable) break;
  }
  if (failure instanceof UpstreamStatus) await failure.drain();
  return { ok: false, failure, skipped: calls === 0 && failure instanceof BreakerOpen, keyFault };
}

/** Each pool key's KeyHealth field (upstream NUL key id), made once per route object. */
const fieldsOfRoute = new WeakMap<RouteSnapshot, Map<string, string>>();
function keyFields(route: RouteSnapshot, keys: readonly RouteKey[]): Map<string, string> {
  let f = fieldsOfRoute.get(route);
  if (f === undefined) {
    f = new Map(keys.map((k) => [k.id, keyField(route.upstream, k.id)]));
    fieldsOfRoute.set(route, f);
  }
  return f;
}

const fallbackHealth = new WeakMap<DataPlaneOptions, KeyHealth>();
/** The data plane's key health (tests' hand-built options get one of their own). */
export function keyHealthOf(opts: DataPlaneOptions): KeyHealth {
  if (opts.keyHealth) return opts.keyHealth;
  let h = fallbackHealth.get(opts);
  if (h === undefined) fallbackHealth.set(opts, (h = new KeyHealth()));
  return h;
}

const fallbackBudget = new WeakMap<DataPlaneOptions, RetryBudget>();
function retryBudgetOf(opts: DataPlaneOptions): RetryBudget {
  if (opts.retryBudget) return opts.retryBudget;
  let b = fallbackBudget.get(opts);
  if (b === undefined) fallbackBudget.set(opts, (b = new RetryBudget()));
  return b;
}

function sleepFor(ms: number, signal: AbortLike): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
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
