import { open, seal } from "@modelgate/data-plane";
import { audit, SYSTEM_ACTOR } from "../audit/record.ts";
import type { Db } from "../db/client.ts";
import type { ServiceContext } from "./context.ts";
import { badInput, notFound } from "./errors.ts";
import { SECRET_MAX_LENGTH } from "./upstream-provider.ts";

// Upstream key pools (docs/routing.md): several credentials per upstream, each named by the operator. The data
// planes disable a key the provider refuses (401/403, 402, out of quota) at once and report it here: the state
// is recorded (enabled false, reason, when), audited, alerted; only an operator enables it again.

/** A key's id: the operator's name for it, shown everywhere the secret is not. */
export const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
export const MAX_KEYS = 64;

/** A key as the config file or GraphQL gives it; apiKey undefined (GraphQL only): keep the stored secret. */
export interface KeyInput {
  id: string;
  apiKey?: string | undefined;
  weight?: number | null | undefined;
}

/** What the data planes share about keys right now, and how an enable reaches them. */
export interface KeyStateLink {
  /** the keys the data planes see disabled or resting (field: upstream NUL key id) */
  states(): Promise<Record<string, { reason?: string; until?: number; at: number }>>;
  /** forgets a key's disable and rest on every data plane (an operator enabled it) */
  clear(upstream: string, key: string): Promise<void>;
}

/** A key the data plane disabled, as it reports it. */
export interface KeyDisabledReport {
  upstream: string;
  key: string;
  reason: string;
  at: number;
}

type Tx = Parameters<Parameters<Db["$transaction"]>[0]>[0];

/** Checks a pool's ids, secrets and weights; returns the keys in order. */
export function checkKeys(keys: readonly KeyInput[], requireSecrets: boolean): KeyInput[] {
  if (keys.length > MAX_KEYS) throw badInput(`at most ${MAX_KEYS} keys per upstream`, "keys");
  const seen = new Set<string>();
  for (const k of keys) {
    if (!KEY_ID.test(k.id)) throw badInput("a key id is 1 to 64 letters, digits, '.', '_' or '-'", "keys");
    if (seen.has(k.id)) throw badInput(`key id ${k.id} is given twice`, "keys");
    seen.add(k.id);
    if (k.weight != null && (!Number.isInteger(k.weight) || k.weight < 0 || k.weight > 1_000_000))
      throw badInput("a key's weight is a whole number from 0 to 1000000", "keys");
    if (k.apiKey !== undefined && k.apiKey.trim() === "") throw badInput(`key ${k.id} needs its apiKey`, "keys");
    if (k.apiKey !== undefined && k.apiKey.length > SECRET_MAX_LENGTH.apiKey)
      throw badInput(`key ${k.id}'s apiKey is longer than ${SECRET_MAX_LENGTH.apiKey} characters`, "keys");
    if (requireSecrets && k.apiKey === undefined) throw badInput(`key ${k.id} needs its apiKey`, "keys");
  }
  return [...keys];
}

/**
 * Makes the upstream's pool these keys: new ones created, given ones updated, others removed. A key keeps its
 * enabled state (a reload never brings back a key the provider refused), unless its secret changed: a new
 * secret is a new credential, enabled again.
 */
export async function replaceKeys(
  tx: Tx,
  masterKey: Buffer,
  upstreamId: string,
  keys: readonly KeyInput[],
): Promise<{ added: string[]; removed: string[]; changed: string[] }> {
  if (keys.length === 0) {
    const gone = await tx.upstreamKey.deleteMany({ where: { upstreamId } });
    return { added: [], removed: gone.count > 0 ? ["*"] : [], changed: [] };
  }
  const existing = new Map((await tx.upstreamKey.findMany({ where: { upstreamId } })).map((k) => [k.id, k]));
  const added: string[] = [];
  const changed: string[] = [];
  const fresh: { upstreamId: string; id: string; apiKeyEnc: string; weight: number; position: number }[] = [];
  for (const [position, k] of keys.entries()) {
    const before = existing.get(k.id);
    const weight = k.weight ?? 1;
    if (before === undefined) {
      if (k.apiKey === undefined) throw badInput(`key ${k.id} needs its apiKey`, "keys");
      fresh.push({ upstreamId, id: k.id, apiKeyEnc: seal(masterKey, k.apiKey), weight, position });
      added.push(k.id);
      continue;
    }
    const secretChanged = k.apiKey !== undefined && open(masterKey, before.apiKeyEnc) !== k.apiKey;
    if (!secretChanged && before.weight === weight && before.position === position) continue;
    await tx.upstreamKey.update({
      where: { upstreamId_id: { upstreamId, id: k.id } },
      data: {
        weight,
        position,
        ...(secretChanged
          ? { apiKeyEnc: seal(masterKey, k.apiKey!), enabled: true, reason: null, disabledAt: null }
          : {}),
      },
    });
    if (secretChanged) changed.push(k.id);
  }
  // one statement for a whole new pool (the config file's start-up sync runs in one short transaction)
  if (fresh.length > 0) await tx.upstreamKey.createMany({ data: fresh });
  const removed = [...existing.keys()].filter((id) => !keys.some((k) => k.id === id));
  if (removed.length > 0) await tx.upstreamKey.deleteMany({ where: { upstreamId, id: { in: removed } } });
  return { added, removed, changed };
}

/** An operator enables or disables one key of an upstream's pool. */
export async function setUpstreamKeyEnabled(ctx: ServiceContext, upstream: string, key: string, enabled: boolean) {
  const up = await ctx.prisma.upstream.findUnique({ where: { name: upstream } });
  if (!up) throw notFound("upstream");
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.upstreamKey.findUnique({ where: { upstreamId_id: { upstreamId: up.id, id: key } } });
    if (!before) throw notFound("upstream key");
    const after = await tx.upstreamKey.update({
      where: { upstreamId_id: { upstreamId: up.id, id: key } },
      data: enabled
        ? { enabled: true, reason: null, disabledAt: null }
        : { enabled: false, reason: "operator", disabledAt: new Date() },
    });
    await audit(tx, ctx.actor, {
      action: enabled ? "upstream_key.enable" : "upstream_key.disable",
      subjectType: "upstream_key",
      subjectId: `${upstream}/${key}`,
      before: keyView(before),
      after: keyView(after),
    });
    return after;
  });
  // Before the snapshot says so: a data plane must not see the key enabled and still disabled in its states.
  if (enabled) await ctx.keyStates?.clear(upstream, key);
  ctx.snapshotChanged();
  await ctx.policyPublished?.();
  return { upstream, ...keyView(row) };
}

/**
 * A data plane disabled a key: recorded once (several replicas may report the same key), audited as the
 * system's act. Returns whether this report changed the key (so the operators are alerted once).
 */
export async function recordKeyDisabled(ctx: ServiceContext, d: KeyDisabledReport): Promise<boolean> {
  const up = await ctx.prisma.upstream.findUnique({ where: { name: d.upstream } });
  if (!up) return false;
  const changed = await ctx.prisma.$transaction(async (tx) => {
    // A report read after an operator enabled the key again (the CLI writes the database while the report still
    // waits in Redis) is older than that enable: it must not disable the key a second time.
    const n = await tx.upstreamKey.updateMany({
      where: { upstreamId: up.id, id: d.key, enabled: true, updatedAt: { lte: new Date(d.at) } },
      data: { enabled: false, reason: d.reason, disabledAt: new Date(d.at) },
    });
    if (n.count === 0) return false;
    await audit(tx, SYSTEM_ACTOR, {
      action: "upstream_key.disable",
      subjectType: "upstream_key",
      subjectId: `${d.upstream}/${d.key}`,
      after: { upstream: d.upstream, key: d.key, enabled: false, reason: d.reason, by: "data plane" },
    });
    return true;
  });
  if (changed) ctx.snapshotChanged();
  return changed;
}

/** A key as GraphQL, the CLI and the audit log show it: never its secret. */
export const keyView = (k: {
  id: string;
  weight: number;
  enabled: boolean;
  reason: string | null;
  disabledAt: Date | null;
}) => ({ id: k.id, weight: k.weight, enabled: k.enabled, reason: k.reason, disabledAt: k.disabledAt });

/**
 * Each key's state as the operator sees it: disabled (recorded, or seen by a data plane and not yet recorded),
 * resting (a 429's retry-after not yet over), or active.
 */
export async function upstreamKeyStates(
  ctx: Pick<ServiceContext, "prisma" | "keyStates">,
): Promise<
  Map<string, { id: string; weight: number; state: string; reason: string | null; disabledAt: Date | null }[]>
> {
  const rows = await ctx.prisma.upstreamKey.findMany({
    include: { upstream: { select: { name: true } } },
    orderBy: [{ upstreamId: "asc" }, { position: "asc" }],
  });
  const live: Awaited<ReturnType<KeyStateLink["states"]>> = (await ctx.keyStates?.states().catch(() => ({}))) ?? {};
  const now = Date.now();
  const out = new Map<
    string,
    { id: string; weight: number; state: string; reason: string | null; disabledAt: Date | null }[]
  >();
  for (const k of rows) {
    const seen = live[`${k.upstream.name}\u0000${k.id}`];
    let state = "active";
    let reason = k.reason;
    let disabledAt = k.disabledAt;
    if (!k.enabled) state = "disabled";
    else if (seen?.reason !== undefined) {
      state = "disabled";
      reason = seen.reason;
      disabledAt = new Date(seen.at);
    } else if (seen?.until !== undefined && seen.until > now) {
      state = "resting";
      reason = "rate_limited";
    }
    const list = out.get(k.upstream.name) ?? [];
    list.push({ id: k.id, weight: k.weight, state, reason, disabledAt });
    out.set(k.upstream.name, list);
  }
  return out;
}

/**
 * Distributed mode: forgets the data planes' disables of keys the database says were enabled after them (an
 * operator's enable through the CLI, which writes to the database without the control plane's Redis link).
 */
export async function clearEnabledKeyStates(ctx: Pick<ServiceContext, "prisma" | "keyStates">): Promise<number> {
  if (!ctx.keyStates) return 0;
  const live = await ctx.keyStates.states();
  const disabled = Object.entries(live).filter(([, e]) => e.reason !== undefined);
  if (disabled.length === 0) return 0;
  const rows = await ctx.prisma.upstreamKey.findMany({
    where: { enabled: true },
    select: { id: true, updatedAt: true, upstream: { select: { name: true } } },
  });
  const enabledAt = new Map(rows.map((r) => [`${r.upstream.name}\u0000${r.id}`, r.updatedAt.getTime()]));
  let cleared = 0;
  for (const [field, e] of disabled) {
    const at = enabledAt.get(field);
    if (at === undefined || at <= e.at) continue;
    const [upstream, key] = field.split("\u0000") as [string, string];
    await ctx.keyStates.clear(upstream, key);
    cleared++;
  }
  return cleared;
}
