import { audit } from "../audit/record.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, badInput } from "./errors.ts";
import { nameSchema, parseField } from "./inputs.ts";

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

/**
 * Opens an account. The name is unique by the database's constraint, not by a look-up first: two concurrent
 * calls with one name give one account and one CONFLICT, never two accounts or an internal error.
 */
export async function createAccount(
  ctx: ServiceContext,
  input: { name: string; email?: string | null; balanceMicro?: bigint; kind?: "standard" | "trial" },
) {
  const name = parseField(nameSchema, input.name, "name");
  const opening = input.balanceMicro ?? 0n;
  if (opening < 0n) throw badInput("the opening balance cannot be negative", "initialBalance");
  let account;
  try {
    account = await ctx.prisma.$transaction(async (tx) => {
      const created = await tx.account.create({
        data: { name, email: input.email ?? null, kind: input.kind ?? "standard" },
      });
      const opened = opening === 0n ? created : await applyLedger(tx, created.id, "topup", opening, "opening balance");
      await audit(tx, ctx.actor, {
        action: "account.create",
        subjectType: "account",
        subjectId: opened.id,
        accountId: opened.id,
        after: opened,
      });
      return opened;
    });
  } catch (err) {
    if ((err as { code?: string }).code === "P2002") throw new AppError("CONFLICT", "an account with this name exists");
    throw err;
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
  if (amountMicro <= 0n) throw new Error("a top-up must be positive");
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
