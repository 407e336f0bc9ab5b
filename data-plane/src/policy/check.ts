import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";
import { GatewayError } from "../errors.ts";
import type { BudgetCalendar } from "../billing/periods.ts";
import { checkBudgets, wallCalendar } from "./budget.ts";
import { compileAllowlist, type IpMatcher } from "./ip.ts";

/** Spend the snapshot does not reflect yet (see billing/spend.ts), in micro-units. */
export interface UnsettledSpend {
  keySpent: bigint;
  accountSpent: bigint;
}

export interface PolicyInput {
  key: KeySnapshot;
  account: AccountSnapshot;
  /** the full model id the request names */
  model: string;
  /** the resolved client address (policy/client-ip.ts); null when unknown */
  clientIp: string | null;
  /** epoch milliseconds */
  now: number;
  spend: UnsettledSpend;
  /** the budget periods' calendar and clock (default: the wall clock) */
  calendar?: BudgetCalendar;
}

// Parsed forms of the snapshot's strings, built on first use and kept as long as the snapshot object lives, so
// each key is compiled once per version rather than per request. Policy fields of an entity object never change;
// its settled figures (spent, balance, budgets) are patched in place by money changes (snapshot/store.ts), so
// their parsed forms remember the string they came from and are parsed again when it is another one.
interface CompiledKey {
  expiresAt: number;
  quota: bigint | null;
  spent: bigint;
  /** the key.spent that `spent` was parsed from */
  spentText: string;
  models: ReadonlySet<string> | null;
  ip: IpMatcher | null;
}
const compiledKeys = new WeakMap<KeySnapshot, CompiledKey>();
const balances = new WeakMap<AccountSnapshot, { text: string; micro: bigint }>();

export function compileKey(key: KeySnapshot): CompiledKey {
  let c = compiledKeys.get(key);
  if (c !== undefined && c.spentText !== key.spent) {
    c.spent = BigInt(key.spent);
    c.spentText = key.spent;
  }
  if (c === undefined) {
    // An unparsable expiry counts as already expired: fail closed.
    const expiresAt = key.expiresAt === null ? Infinity : Date.parse(key.expiresAt);
    c = {
      expiresAt: Number.isNaN(expiresAt) ? -Infinity : expiresAt,
      quota: key.quota === null ? null : BigInt(key.quota),
      spent: BigInt(key.spent),
      spentText: key.spent,
      models: key.allowedModels.length === 0 ? null : new Set(key.allowedModels),
      ip: compileAllowlist(key.ipAllowlist),
    };
    compiledKeys.set(key, c);
  }
  return c;
}

export function balanceOf(account: AccountSnapshot): bigint {
  let b = balances.get(account);
  if (b === undefined || b.text !== account.balance) {
    b = { text: account.balance, micro: BigInt(account.balance) };
    balances.set(account, b);
  }
  return b.micro;
}

/** Whether the key may call the model (an empty allowed list means every model); for GET /v1/models too. */
export function isModelAllowed(key: KeySnapshot, model: string): boolean {
  const models = compileKey(key).models;
  return models === null || models.has(model);
}

/**
 * Decides whether a key may make this call, before any rate limiting or upstream work. Returns null when it may
 * (no allocation on the success path) or the GatewayError to answer with. Checks run from the cheapest and
 * most fundamental to the money checks, so a refused caller learns as little as possible: a revoked key hears
 * only that, and an address outside the allowlist hears nothing about models or balance.
 *
 * Money: the key's quota is reached when snapshot spent + unsettled key spend ≥ quota; the account's balance
 * is exhausted when snapshot balance − unsettled account spend ≤ 0. This check lets a call through with any
 * positive remainder; admission then holds the call's estimated cost against what the calls in flight hold
 * (billing/reservation.ts), so a burst overruns by about one call; see policy/README.md.
 */
export function checkKeyPolicy(input: PolicyInput): GatewayError | null {
  const refusal = checkKeyAccess(input);
  if (refusal) return refusal;
  const { key, account } = input;
  const c = compileKey(key);
  if (c.models !== null && !c.models.has(input.model)) {
    return new GatewayError(
      "permission",
      "model_not_allowed",
      `This API key may not use the model '${input.model}'; GET /v1/models lists the models it may use.`,
      "model",
    );
  }
  if (c.quota !== null && c.spent + input.spend.keySpent >= c.quota) {
    return new GatewayError(
      "rate_limit",
      "insufficient_quota",
      "This API key has used up its spending quota; ask the account operator to raise it.",
      null,
      // The official OpenAI and Anthropic SDKs retry a 429 unless told otherwise; a spent quota does not come
      // back by waiting.
      { "x-should-retry": "false" },
    );
  }
  const calendar = input.calendar ?? wallCalendar;
  const budget =
    checkBudgets(key.budgets, input.spend.keySpent, account, calendar, "This API key") ??
    checkBudgets(account.budgets, input.spend.accountSpent, account, calendar, "The account");
  if (budget) return budget;
  if (balanceOf(account) - input.spend.accountSpent <= 0n) {
    return new GatewayError(
      "payment_required",
      "insufficient_balance",
      "The account's balance is exhausted; top it up to continue.",
    );
  }
  return null;
}

/**
 * The checks that do not depend on the call (revoked, expired, account disabled, IP allowlist), in the same
 * order: what every endpoint a key can reach must pass, GET /v1/models and count_tokens included.
 */
export function checkKeyAccess(input: Pick<PolicyInput, "key" | "account" | "clientIp" | "now">): GatewayError | null {
  const { key, account } = input;
  if (key.status !== "active") {
    return new GatewayError("authentication", "key_revoked", "This API key has been revoked.");
  }
  const c = compileKey(key);
  if (input.now >= c.expiresAt) {
    return new GatewayError(
      "authentication",
      "key_expired",
      key.expiresAt === null || c.expiresAt === -Infinity
        ? "This API key has expired."
        : `This API key expired at ${key.expiresAt}.`,
    );
  }
  if (account.status !== "active") {
    return new GatewayError("permission", "account_disabled", "The account of this API key is disabled.");
  }
  if (c.ip !== null && (input.clientIp === null || !c.ip.matches(input.clientIp))) {
    return new GatewayError(
      "permission",
      "ip_not_allowed",
      input.clientIp === null
        ? "This API key only accepts requests from allowed addresses, and the client address is unknown."
        : `This API key does not accept requests from ${input.clientIp}.`,
    );
  }
  return null;
}
