import type { Db } from "../db/client.ts";
import type { Prisma } from "../generated/prisma/client.ts";

// The audit log's write side. Every change by an operator or an owner writes one row, in the same transaction
// as the change where the change is one (so nothing is acknowledged without its row), with who, from where,
// what, and the values before and after — never a secret (see redact below).

/** Who acts. GraphQL requests carry the signed-in user; the admin endpoint and the CLI name themselves. */
export interface AuditActor {
  type: "user" | "admin_token" | "cli" | "anonymous" | "system";
  userId?: string | null;
  email?: string | null;
  /** session or token */
  via?: string | null;
  address?: string | null;
}

export const SYSTEM_ACTOR: AuditActor = { type: "system" };

export interface AuditEntry {
  action: string;
  subjectType: string;
  subjectId?: string | null;
  /** the customer account concerned; owners see their account's rows */
  accountId?: string | null;
  before?: unknown;
  after?: unknown;
}

/** A Prisma client or an interactive transaction's client: what `audit` writes through. */
export type AuditDb = Pick<Db, "auditLog">;

// Column names that hold secrets or their derivatives anywhere in the data model: never copied into the log.
const SECRET_FIELD = /(password|secret|hash|enc$|token|totp|recovery|credential|^apikey$|^key$)/i;
// A field that *names* a secret's presence is fine to keep (hasApiKey, apiKeyChanged).
const SAFE_FIELD = /^(has[A-Z]|.*Changed$|tokenScopes$|prefix$)/;

/** A JSON-safe copy without secrets: bigints as decimal text, dates as ISO text, secret-named fields dropped. */
export function redact(value: unknown): Prisma.InputJsonValue | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return null;
  if (Array.isArray(value)) return value.map((v) => redact(v)) as Prisma.InputJsonValue;
  if (typeof value === "object") {
    const out: Record<string, Prisma.InputJsonValue | null> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (SECRET_FIELD.test(k) && !SAFE_FIELD.test(k)) continue;
      if (v === undefined) continue;
      out[k] = redact(v);
    }
    return out as Prisma.InputJsonValue;
  }
  return value as Prisma.InputJsonValue;
}

/** Writes one audit row through `db` (pass the transaction's client to commit it with the change). */
export async function audit(db: AuditDb, actor: AuditActor | undefined, entry: AuditEntry): Promise<void> {
  const who = actor ?? SYSTEM_ACTOR;
  const before = redact(entry.before);
  const after = redact(entry.after);
  await db.auditLog.create({
    data: {
      actorType: who.type,
      actorUserId: who.userId ?? null,
      actorEmail: who.email ?? null,
      actorVia: who.via ?? null,
      actorAddress: who.address ?? null,
      action: entry.action,
      subjectType: entry.subjectType,
      subjectId: entry.subjectId ?? null,
      accountId: entry.accountId ?? null,
      ...(before === null ? {} : { before }),
      ...(after === null ? {} : { after }),
    },
  });
}
