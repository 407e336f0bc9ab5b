import { audit, type AuditActor } from "../audit/record.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, badInput } from "./errors.ts";
import { limitSchema, nameSchema, parseField } from "./inputs.ts";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class NotFoundError extends Error {}

/** Operators and scripts name accounts either way; a UUID-shaped name is looked up as both. */
export async function resolveAccount(ctx: ServiceContext, nameOrId: string) {
  const account = await ctx.prisma.account.findFirst({
    where: uuid.test(nameOrId) ? { OR: [{ id: nameOrId }, { name: nameOrId }] } : { name: nameOrId },
  });
  if (!account) throw new NotFoundError(`no account named or with id ${nameOrId}`);
  return account;
}

export interface NewAccount {
  name: string;
  email?: string | null;
  balanceMicro?: bigint;
  kind?: "standard" | "trial";
  /** account-wide rate limits (null or absent: none) */
  rpm?: number | null;
  tpm?: number | null;
  concurrency?: number | null;
}

/** The checked columns of a new account and its opening balance, before any transaction. */
export function newAccountOf(input: NewAccount) {
  const opening = input.balanceMicro ?? 0n;
  if (opening < 0n) throw badInput("the opening balance cannot be negative", "initialBalance");
  const limit = (v: number | null | undefined, field: string) => parseField(limitSchema(field), v ?? null, field);
  return {
    opening,
    data: {
      name: parseField(nameSchema, input.name, "name"),
      email: input.email ?? null,
      kind: input.kind ?? "standard",
      rpm: limit(input.rpm, "rpm"),
      tpm: limit(input.tpm, "tpm"),
      concurrency: limit(input.concurrency, "concurrency"),
    },
  };
}

/** Writes a new account, its opening balance as a ledger top-up, and the audit row, in the caller's transaction. */
export async function insertAccount(tx: Tx, actor: AuditActor | undefined, account: ReturnType<typeof newAccountOf>) {
  const created = await tx.account.create({ data: account.data });
  const opened =
    account.opening === 0n ? created : await applyLedger(tx, created.id, "topup", account.opening, "opening balance");
  await audit(tx, actor, {
    action: "account.create",
    subjectType: "account",
    subjectId: opened.id,
    accountId: opened.id,
    after: opened,
  });
  return opened;
}

/** The account name is unique by the database's constraint: a duplicate is a CONFLICT, never an internal error. */
export function duplicateName(err: unknown): unknown {
  return (err as { code?: string }).code === "P2002"
    ? new AppError("CONFLICT", "an account with this name exists")
    : err;
}

/**
 * Opens an account. The name is unique by the database's constraint, not by a look-up first: two concurrent
 * calls with one name give one account and one CONFLICT, never two accounts or an internal error.
 */
export async function createAccount(ctx: ServiceContext, input: NewAccount) {
  const checked = newAccountOf(input);
  let account;
  try {
    account = await ctx.prisma.$transaction((tx) => insertAccount(tx, ctx.actor, checked));
  } catch (err) {
    throw duplicateName(err);
  }
  ctx.snapshotChanged();
  return account;
}

export type Tx = Parameters<Parameters<ServiceContext["prisma"]["$transaction"]>[0]>[0];

/** Moves the balance and writes the ledger row in the same transaction, so the two never disagree. */
export async function applyLedger(
  tx: Tx,
  accountId: string,
  kind: "topup" | "refund" | "adjustment",
  amountMicro: bigint,
  note: string | null,
) {
  const account = await tx.account.update({
    where: { id: accountId },
    data: { balanceMicro: { increment: amountMicro } },
  });
  await tx.ledgerEntry.create({
    data: { accountId, kind, amountMicro, balanceAfterMicro: account.balanceMicro, note },
  });
  return account;
}

export async function topUp(ctx: ServiceContext, accountId: string, amountMicro: bigint, note?: string) {
  if (amountMicro <= 0n) throw badInput("a top-up must be positive", "amount");
  const account = await ctx.prisma.$transaction(async (tx) => {
    const after = await applyLedger(tx, accountId, "topup", amountMicro, note ?? null);
    await audit(tx, ctx.actor, {
      action: "account.topup",
      subjectType: "account",
      subjectId: accountId,
      accountId,
      before: { balanceMicro: after.balanceMicro - amountMicro },
      after: { balanceMicro: after.balanceMicro, amountMicro, note: note ?? null },
    });
    return after;
  });
  ctx.snapshotChanged();
  return account;
}
