import type { IncomingMessage } from "node:http";
import type { AccountSnapshot, KeySnapshot, ModelSnapshot, Price } from "../contract/index.ts";
import { pickPrice } from "../billing/cost.ts";
import { GatewayError } from "../errors.ts";
import { moneyRooms, reservationEstimate, type Reservation } from "../billing/reservation.ts";
import type { BudgetCalendar } from "../billing/periods.ts";
import { checkKeyPolicy, isModelAllowed, type UnsettledSpend } from "../policy/check.ts";
import { resolveClientIp } from "../policy/client-ip.ts";
import { rateLimitError, rateLimitHeaders } from "../ratelimit/headers.ts";
import type { AcquireResult, RateLimitGrant } from "../ratelimit/types.ts";
import { unknownKey } from "./auth.ts";
import type { DataPlaneOptions } from "./context.ts";

export interface Caller {
  key: KeySnapshot;
  account: AccountSnapshot;
  clientIp: string | null;
}

/** The key's snapshot entry, or 401. Runs before the body is read, so a bad key costs nothing. */
export function identify(opts: DataPlaneOptions, keyHash: string, req: IncomingMessage): Caller {
  const key = opts.store.key(keyHash);
  if (!key) throw unknownKey();
  const account = opts.store.account(key.accountId);
  if (!account) throw unknownKey();
  return {
    key,
    account,
    clientIp: resolveClientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], opts.trustedProxies),
  };
}

export interface Admission {
  /** the model serving the call: the one the request named, or the fallback that took over (serveAs) */
  model: ModelSnapshot;
  /** the serving model's price for this account */
  price: Price;
  /**
   * the models to try, in order, when every route of the one named fails before the first byte: the request's
   * own fallbacks then the model's configured ones, each once, only those the key may call (fallbackChain)
   */
  fallbacks: ModelSnapshot[];
  grant: RateLimitGrant;
  /** x-ratelimit-* headers for the response */
  headers: Record<string, string>;
  /** the prompt's size in tokens as estimated from the request (for a call the upstream never reports) */
  estimatedPromptTokens: number;
  /** the call's hold on its key's and account's money, settled by Call.finish (billing/reservation.ts) */
  reservation?: Reservation;
}

/**
 * Takes the key's and the account's rate limits (one Redis round trip in distributed mode). Started as soon
 * as the key is known and the body's size declared, so the round trip overlaps reading and parsing the body;
 * admit() then waits for it. A call refused before it goes upstream gives it all back (cancelLimits).
 */
export async function startLimits(
  opts: DataPlaneOptions,
  caller: Caller,
  estimatedTokens: number,
  now: number,
): Promise<AcquireResult> {
  return opts.rateLimiter.acquire({
    keyId: caller.key.id,
    accountId: caller.account.id,
    keyLimits: caller.key.limits,
    accountLimits: caller.account.limits,
    estimatedTokens,
    now,
  });
}

/**
 * Gives back what started limits took (the call was refused before it went upstream). Idempotent. Awaited
 * before the refusal is sent, so the caller's next request already sees the budget back.
 */
export async function cancelLimits(limits: Promise<AcquireResult>): Promise<void> {
  try {
    const r = await limits;
    if (r.ok) await r.cancel();
  } catch {
    // the limiter reports its own failures; a lease left behind expires by itself
  }
}

/**
 * Everything the key and account say, from the snapshot plus the running spend counters, then the rate
 * limits (started early by the caller, or here). Throws the refusal in the gateway's terms; limits the
 * caller started are the caller's to cancel when this throws.
 */
export async function admit(
  opts: DataPlaneOptions,
  caller: Caller,
  modelId: string,
  estimatedTokens: number,
  now: number,
  limits?: Promise<AcquireResult>,
  /** what the endpoint serves: a chat endpoint refuses an embedding model, and the other way round */
  purpose: "chat" | "embedding" = "chat",
  /** the request's output cap (max_tokens …); absent: DEFAULT_RESERVED_OUTPUT_TOKENS is reserved */
  maxOutputTokens?: number,
  /** the fallbacks the request names (server/fallbacks.ts), tried before the model's configured ones */
  requestFallbacks: readonly string[] = [],
): Promise<Admission> {
  const spend = await opts.spend.get(caller.key, caller.account);
  const refusal = checkKeyPolicy({
    key: caller.key,
    account: caller.account,
    model: modelId,
    clientIp: caller.clientIp,
    now,
    spend,
    calendar: opts.calendar,
  });
  if (refusal) throw refusal;
  const model = opts.store.model(modelId);
  if (!model) {
    throw new GatewayError(
      "not_found",
      "model_not_found",
      `The model '${modelId}' does not exist. Use a full model ID from the model list (GET /v1/models), not a display name or abbreviation.`,
      "model",
    );
  }
  if ((model.type ?? "chat") !== purpose) throw wrongModelType(modelId, purpose);
  const result = await (limits ?? startLimits(opts, caller, estimatedTokens, now));
  if (!result.ok) throw rateLimitError(result);
  // Last, once the limiter answered (calls that ended meanwhile are in the counters): the call holds its
  // estimated cost against the key's and the account's money, atomically with the check, so parallel calls
  // see each other and a burst overruns a quota, budget or balance by about one call, not by every call in
  // flight (billing/reservation.ts). A refusal is the one the exhausted limit gives.
  const price = pickPrice(caller.account, model);
  // Embeddings do not fall back (docs/routing.md): their calls hold only their own model's price.
  const fallbacks = purpose === "chat" ? fallbackChain(opts, caller, model, requestFallbacks, purpose) : [];
  // The hold covers the dearest model that may serve the call: a fallback at a higher price cannot then overrun
  // a quota, budget or balance by more than one call, as the model named cannot. Settled at the actual cost.
  const output = purpose === "embedding" ? 0 : maxOutputTokens;
  let estimate = reservationEstimate(price, estimatedTokens, output);
  for (const f of fallbacks) {
    const e = reservationEstimate(pickPrice(caller.account, f), estimatedTokens, output);
    if (e > estimate) estimate = e;
  }
  const calendar = opts.calendar;
  const reserved = await opts.spend.reserve(
    caller.key,
    caller.account,
    estimate,
    moneyRooms(caller.key, caller.account, calendar),
  );
  if (!reserved.ok) {
    await result.cancel();
    throw moneyRefusal(caller, modelId, now, reserved.spend, calendar);
  }
  return {
    model,
    price,
    fallbacks,
    grant: result,
    headers: rateLimitHeaders(result.info),
    estimatedPromptTokens: estimatedTokens,
    reservation: reserved.reservation,
  };
}

/**
 * The models that may take over from `model`, in order: the request's own fallbacks, then the model's
 * configured ones (not theirs in turn: one level, no cycles), each once. A name the key may not call, one the
 * gateway does not serve, or one of the wrong type (an embedding model behind a chat model) is skipped, all
 * alike, so a fallback list cannot probe which models exist: a key is never served by a model it may not call.
 */
export function fallbackChain(
  opts: DataPlaneOptions,
  caller: Caller,
  model: ModelSnapshot,
  requested: readonly string[],
  purpose: "chat" | "embedding" = "chat",
): ModelSnapshot[] {
  const configured = model.fallbacks;
  if (requested.length === 0 && (configured === undefined || configured.length === 0)) return [];
  const out: ModelSnapshot[] = [];
  for (const id of configured === undefined ? requested : [...requested, ...configured]) {
    if (id === model.id || out.some((m) => m.id === id) || !isModelAllowed(caller.key, id)) continue;
    const m = opts.store.model(id);
    if (m !== undefined && (m.type ?? "chat") === purpose) out.push(m);
  }
  return out;
}

/** The fallback `model` serves the admitted call from now on: the answer, the usage row and the bill name it. */
export function serveAs(admission: Admission, caller: Caller, model: ModelSnapshot): void {
  admission.model = model;
  admission.price = pickPrice(caller.account, model);
}

/**
 * Raises an admitted call's token estimate: a Responses call whose previous_response_id the gateway expanded
 * sends the whole conversation upstream, not the few bytes of its body, and tpm admits on what goes upstream.
 * The limiter adds only the difference to the call's tpm take, atomically (the call keeps its request and its
 * concurrency slot throughout, so no other call can take them, or the tokens, in between). Refused, the call
 * ends exactly as one the limiter refused at admission: its grant is cancelled (request, tokens and slot given
 * back, as admit() does for a call the late policy check refuses and handleGenerate for any call refused before
 * it goes upstream: refusals cost no rate-limit budget) and it is a 429 with the tpm refusal's Retry-After,
 * which is also the wait for the whole new estimate once that take is given back. Its later release is a no-op.
 */
export async function topUpLimits(admission: Admission, estimatedTokens: number, now: number): Promise<void> {
  if (estimatedTokens <= admission.estimatedPromptTokens) return;
  const result = await admission.grant.topUp(estimatedTokens, now);
  if (!result.ok) {
    await admission.grant.cancel(now);
    throw rateLimitError(result);
  }
  admission.headers = rateLimitHeaders(result.info);
  admission.estimatedPromptTokens = estimatedTokens;
}

/**
 * The refusal for a reservation that does not fit: checkKeyPolicy on the spend figures the counter answered
 * (made so that the limit that refused is exhausted by them). Should the snapshot have moved in between, the
 * subject's limits are taken as used up, so the answer is still that limit's refusal, never a pass.
 */
function moneyRefusal(
  caller: Caller,
  modelId: string,
  now: number,
  spend: UnsettledSpend,
  calendar: BudgetCalendar,
): GatewayError {
  const input = { key: caller.key, account: caller.account, model: modelId, clientIp: caller.clientIp, now, calendar };
  const ALL = 1n << 62n;
  return (
    checkKeyPolicy({ ...input, spend }) ??
    checkKeyPolicy({ ...input, spend: { keySpent: ALL, accountSpent: ALL } }) ??
    new GatewayError(
      "payment_required",
      "insufficient_balance",
      "The account's balance is exhausted; top it up to continue.",
    )
  );
}

const wrongModelType = (modelId: string, purpose: "chat" | "embedding"): GatewayError =>
  new GatewayError(
    "invalid_request",
    "wrong_model_type",
    purpose === "chat"
      ? `The model '${modelId}' is an embedding model: call POST /v1/embeddings (Gemini: :embedContent) with it.`
      : `The model '${modelId}' is a chat model, not an embedding model. See GET /v1/models.`,
    "model",
  );
