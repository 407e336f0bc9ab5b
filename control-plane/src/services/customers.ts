import type { Mailer } from "../mail/mailer.ts";
import { duplicateName, insertAccount, newAccountOf, type NewAccount } from "./accounts.ts";
import type { ServiceContext } from "./context.ts";
import { trialDefaults, writeTrialPolicy } from "./key-policy.ts";
import { checkEmail, insertInvitation, insertUser, mailInvitation, newUserOf } from "./users.ts";

// Opening a customer: the account (opening balance, limits), a trial account's policy and the first owner (with a
// password, or invited), all in one transaction — a refused owner leaves no half-opened account behind.

export interface NewCustomer extends NewAccount {
  /** trial accounts: each key's quota and the expiry every key carries (the defaults fill what is left out) */
  trialQuotaMicro?: bigint | null;
  trialExpiresAt?: Date | null;
  /** the first owner: with a password, a user now; without one, an invitation (mailed, token returned once) */
  owner?: { email: string; name?: string | null; password?: string | null } | null;
}

export async function openCustomer(ctx: ServiceContext & { mail: Mailer }, input: NewCustomer) {
  const account = newAccountOf(input);
  const owner = input.owner;
  // The slow and the plain checks first, outside the transaction: the owner's password hash, the address.
  const ownerUser = owner?.password
    ? await newUserOf({ email: owner.email, password: owner.password, name: owner.name, role: "owner" })
    : null;
  const inviteTo = owner && !owner.password ? checkEmail(owner.email) : null;
  let opened;
  try {
    opened = await ctx.prisma.$transaction(async (tx) => {
      const row = await insertAccount(tx, ctx.actor, account);
      if (row.kind === "trial" && (input.trialQuotaMicro != null || input.trialExpiresAt != null)) {
        const defaults = trialDefaults(row);
        await writeTrialPolicy(tx, ctx.actor, row.id, {
          quotaMicro: input.trialQuotaMicro ?? defaults.quotaMicro,
          expiresAt: input.trialExpiresAt ?? defaults.expiresAt,
        });
      }
      const user = ownerUser ? await insertUser(tx, ctx.actor, { ...ownerUser, accountId: row.id }) : null;
      const invited = inviteTo
        ? await insertInvitation(tx, ctx.actor, { accountId: row.id, email: inviteTo, role: "owner" })
        : null;
      return { account: row, owner: user, invitationToken: invited?.token ?? null };
    });
  } catch (err) {
    throw duplicateName(err);
  }
  ctx.snapshotChanged();
  if (inviteTo && opened.invitationToken)
    await mailInvitation(ctx.mail, inviteTo, opened.account.name, opened.invitationToken);
  return opened;
}
