import { z } from "zod";
import { accountSchema, budgetsSchema, keySchema, microString, modelSchema } from "./snapshot.ts";

// The policy feed: how policy travels from the control plane to the data planes (docs/distributed.md).
//
// Policy is three kinds of entity: keys (by the SHA-256 hex of the key value), accounts (by id) and the model
// catalog (one entity: models, routes and upstreams are few). Each entity carries a version `v` that only grows
// (a Postgres sequence), so a replica never replaces an entity with an older one. A change is one entity,
// whole; a deleted entity travels as a change without data.
//
// Money that moves every second (a key's settled spend; an account's balance and settled spend; their budget
// periods' settled spend) travels apart, as a money change ("key.money", "account.money"): the figures alone,
// `{"v":<version>,"spent":"…"}` / `{"v":<version>,"balance":"…","spent":"…"}`, plus `budgets` when the entity
// has any. Versions are one sequence per entity's state: an entity's `v` is the newest of its policy and money
// changes, so a payload's version says which state it was read from. A replica keeps the entity with the highest
// version and, over it, the money change with a higher version still (a patch of those figures alone).

export const keyEntrySchema = keySchema.extend({ v: z.number().int().nonnegative() });
export type KeyEntry = z.infer<typeof keyEntrySchema>;
export const accountEntrySchema = accountSchema.extend({ v: z.number().int().nonnegative() });
export type AccountEntry = z.infer<typeof accountEntrySchema>;
export const catalogEntrySchema = z.object({
  v: z.number().int().nonnegative(),
  models: z.record(z.string(), modelSchema),
});
export type CatalogEntry = z.infer<typeof catalogEntrySchema>;

export type EntityKind = "key" | "account";
export type MoneyKind = "key.money" | "account.money";
export type PolicyKind = EntityKind | "catalog" | MoneyKind;

/** The settled figures a money change carries (see above); budgets: each period with a limit, whole. */
export const keyMoneySchema = z.object({
  v: z.number().int().nonnegative(),
  spent: microString,
  budgets: budgetsSchema.optional(),
});
export type KeyMoney = z.infer<typeof keyMoneySchema>;
export const accountMoneySchema = z.object({
  v: z.number().int().nonnegative(),
  balance: microString,
  spent: microString,
  budgets: budgetsSchema.optional(),
});
export type AccountMoney = z.infer<typeof accountMoneySchema>;

/** The entity kind a money kind patches. */
export const entityOfMoney = (kind: MoneyKind): EntityKind => (kind === "key.money" ? "key" : "account");
export const isMoneyKind = (kind: PolicyKind): kind is MoneyKind => kind === "key.money" || kind === "account.money";

/**
 * One change as it travels: the entity's id (the key's hash, the account's id, "" for the catalog), its version,
 * and its JSON (beginning `{"v":<version>,`) or null when the entity was deleted; for a money kind, the money
 * change's figures (never null).
 */
export interface PolicyChange {
  kind: PolicyKind;
  id: string;
  v: number;
  json: string | null;
}

/** Serialises an entity with its version first, so a version can be read without parsing the rest. */
export const entityJson = (v: number, entity: object): string => {
  const body = JSON.stringify(entity);
  return body === "{}" ? `{"v":${v}}` : `{"v":${v},${body.slice(1)}`;
};

/** The version of an entity's JSON (see entityJson), or -1 when it does not start with one. */
export function versionOf(json: string): number {
  if (!json.startsWith('{"v":')) return -1;
  let end = 5;
  while (end < json.length && json.charCodeAt(end) >= 48 && json.charCodeAt(end) <= 57) end++;
  return end === 5 ? -1 : Number(json.slice(5, end));
}

/**
 * Keys and accounts live in SHARDS Redis hashes each (per feed epoch), so no Redis value grows with the key
 * count past a few thousand entries and a full load reads them in bounded pieces (HSCAN).
 */
export const POLICY_SHARDS = 256;

/** The shard of an entity id: FNV-1a over its characters, so any id (a key hash, a UUID) spreads evenly. */
export function shardOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % POLICY_SHARDS;
}
