import { z } from "zod";
import { WIRE_PROTOCOLS } from "./protocols.ts";

// The snapshot the control plane publishes and every data-plane replica serves from.
// Money is integer micro-units carried as decimal strings (JSON has no 64-bit integers); prices are
// micro-units per one million tokens.

export const microString = z.string().regex(/^-?\d+$/, "integer micro-units as a decimal string");

export const priceSchema = z.object({
  input: microString,
  output: microString,
  cachedInput: microString.nullable(),
  /** 5-minute prompt-cache writes; absent or null: 1.25 × input (see billing/cost.ts) */
  cacheWrite5m: microString.nullable().optional(),
  /** 1-hour prompt-cache writes; absent or null: 2 × input */
  cacheWrite1h: microString.nullable().optional(),
});
export type Price = z.infer<typeof priceSchema>;

export const protocolSchema = z.enum(WIRE_PROTOCOLS);

/** One credential of an upstream's key pool: the operator's id for it, sealed like apiKeyEnc, weighted. */
export const routeKeySchema = z.object({
  id: z.string(),
  apiKeyEnc: z.string(),
  weight: z.number().int().nonnegative(),
  /** false: an operator disabled it, or the gateway did (the provider refused it) and the control plane recorded it */
  enabled: z.boolean(),
});
export type RouteKey = z.infer<typeof routeKeySchema>;

export const routeSchema = z.object({
  upstream: z.string(),
  protocol: protocolSchema,
  baseUrl: z.string(),
  /** AES-256-GCM ciphertext (see crypto/secret-box); decrypted only in data-plane memory */
  apiKeyEnc: z.string().nullable(),
  upstreamModel: z.string(),
  weight: z.number().int().nonnegative(),
  priority: z.number().int(),
  connectTimeoutMs: z.number().int().positive(),
  firstByteTimeoutMs: z.number().int().positive(),
  idleTimeoutMs: z.number().int().positive(),
  /** who serves it (the registry in data-plane/src/providers); absent in older snapshots: `direct` */
  provider: z.string().optional(),
  /** the provider's settings that are not secret: region, project, API version… */
  providerOptions: z.record(z.string(), z.string()).optional(),
  /** the provider's other secrets (AWS keys, a service account) as sealed JSON, like apiKeyEnc */
  secretsEnc: z.string().nullable().optional(),
  /**
   * the upstream's key pool (docs/routing.md): calls spread over its keys by weight, and a key the provider
   * refuses leaves the rotation. Absent: the one credential apiKeyEnc (or none), as before pools.
   */
  keys: z.array(routeKeySchema).optional(),
});
export type RouteSnapshot = z.infer<typeof routeSchema>;

export const modelSchema = z.object({
  id: z.string(),
  displayName: z.string().nullable(),
  reasoning: z.boolean(),
  /** translations refuse what they would drop (translation.ts); absent in older snapshots: false */
  strict: z.boolean().optional(),
  /** absent in snapshots from before embeddings: chat */
  type: z.enum(["chat", "embedding"]).optional(),
  price: priceSchema,
  routes: z.array(routeSchema),
  /**
   * models tried in order when every route of this one fails before the first byte (docs/routing.md); absent in
   * older snapshots and when there are none
   */
  fallbacks: z.array(z.string()).optional(),
  createdAt: z.string(),
});
export type ModelSnapshot = z.infer<typeof modelSchema>;

export const rateLimitsSchema = z.object({
  rpm: z.number().int().positive().nullable(),
  tpm: z.number().int().positive().nullable(),
  concurrency: z.number().int().positive().nullable(),
});
export type RateLimits = z.infer<typeof rateLimitsSchema>;

/**
 * A spend limit for the current calendar period (day, ISO week, month in the account's time zone) and the
 * spend settled in it when the snapshot was built. `start`/`end` (ISO instants) say which period `spent`
 * belongs to: once the clock passes `end`, a new period has begun and its settled spend is 0 until the next
 * snapshot says otherwise.
 */
export const budgetSchema = z.object({
  limit: microString,
  start: z.string(),
  end: z.string(),
  spent: microString,
});
export type BudgetSnapshot = z.infer<typeof budgetSchema>;

/** Only the periods with a limit are present; absent (older control planes): no budgets. */
export const budgetsSchema = z.object({
  day: budgetSchema.optional(),
  week: budgetSchema.optional(),
  month: budgetSchema.optional(),
});
export type BudgetsSnapshot = z.infer<typeof budgetsSchema>;

export const accountSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(["active", "disabled"]),
  balance: microString,
  /**
   * Cumulative settled spend of the account (never lowered by top-ups). Optional for compatibility; the data
   * plane needs it to tell which part of its running spend counter the balance already reflects (see
   * data-plane/src/billing/spend.ts). When absent, balance is enforced from the snapshot alone.
   */
  spent: microString.optional(),
  limits: rateLimitsSchema,
  /** IANA time zone of the account's budget periods; absent: UTC */
  timeZone: z.string().optional(),
  budgets: budgetsSchema.optional(),
  /** per-model contract prices; models absent here bill at list price */
  contracts: z.record(z.string(), priceSchema),
});
export type AccountSnapshot = z.infer<typeof accountSchema>;

export const keySchema = z.object({
  id: z.string(),
  accountId: z.string(),
  name: z.string(),
  status: z.enum(["active", "revoked"]),
  expiresAt: z.string().nullable(),
  quota: microString.nullable(),
  spent: microString,
  allowedModels: z.array(z.string()),
  ipAllowlist: z.array(z.string()),
  limits: rateLimitsSchema,
  /** the key's own budgets, in its account's time zone */
  budgets: budgetsSchema.optional(),
});
export type KeySnapshot = z.infer<typeof keySchema>;

export const snapshotSchema = z.object({
  version: z.number().int().nonnegative(),
  generatedAt: z.string(),
  /** keyed by the SHA-256 hex of the key value */
  keys: z.record(z.string(), keySchema),
  accounts: z.record(z.string(), accountSchema),
  models: z.record(z.string(), modelSchema),
});
export type Snapshot = z.infer<typeof snapshotSchema>;

export const emptySnapshot = (): Snapshot => ({
  version: 0,
  generatedAt: new Date(0).toISOString(),
  keys: {},
  accounts: {},
  models: {},
});
