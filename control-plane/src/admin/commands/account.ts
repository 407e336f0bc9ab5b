import { z } from "zod";
import { setTimeZone } from "../../budgets/service.ts";
import { createAccount, resolveAccount, topUp } from "../../services/accounts.ts";
import { setAccountLimits, setAccountStatus } from "../../services/catalog.ts";
import { amountSchema, nameSchema, positiveIntText } from "../../services/inputs.ts";
import { formatAmount } from "../../services/money.ts";
import { accountArg } from "../args.ts";
import { command } from "../command.ts";

// Accounts: open, credit, show, change status, rate limits and time zone.

const wallet = (a: { id: string; name: string; balanceMicro: bigint }) => ({
  id: a.id,
  name: a.name,
  balance: formatAmount(a.balanceMicro),
});

export const accountCommands = {
  "account create": command({
    usage: "--name NAME [--email E] [--balance AMOUNT]",
    args: z.object({ name: nameSchema, email: z.string().email().optional(), balance: amountSchema.optional() }),
    options: { initialBalance: "balance" },
    run: async (ctx, a) => wallet(await createAccount(ctx, { name: a.name, email: a.email, balanceMicro: a.balance })),
  }),
  "account topup": command({
    usage: "--account NAME_OR_ID --amount AMOUNT",
    args: z.object({ account: accountArg, amount: amountSchema }),
    run: async (ctx, a) =>
      wallet(await topUp(ctx, (await resolveAccount(ctx, a.account)).id, a.amount, "top-up by operator")),
  }),
  "account show": command({
    usage: "--account NAME_OR_ID",
    args: z.object({ account: accountArg }),
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      return {
        id: account.id,
        name: account.name,
        status: account.status,
        kind: account.kind,
        balance: formatAmount(account.balanceMicro),
        balanceMicro: account.balanceMicro.toString(),
      };
    },
  }),
  "account update": command({
    usage:
      "--account NAME_OR_ID [--status active|disabled] [--rpm N] [--tpm N] [--concurrency N] [--time-zone IANA_ZONE]",
    note: "account-wide rate limits, applied to every key of the account",
    args: z.object({
      account: accountArg,
      status: z.enum(["active", "disabled"]).optional(),
      rpm: positiveIntText.optional(),
      tpm: positiveIntText.optional(),
      concurrency: positiveIntText.optional(),
      "time-zone": z.string().min(1).optional(),
    }),
    run: async (ctx, a) => {
      const found = await resolveAccount(ctx, a.account);
      // Through the services, so each change is audited as the API's are.
      let account = found;
      if (a.status) account = await setAccountStatus(ctx, found.id, a.status);
      if (a.rpm !== undefined || a.tpm !== undefined || a.concurrency !== undefined) {
        account = await setAccountLimits(ctx, found.id, {
          rpm: a.rpm ?? found.rpm,
          tpm: a.tpm ?? found.tpm,
          concurrency: a.concurrency ?? found.concurrency,
        });
      }
      const tz =
        a["time-zone"] === undefined ? account.timeZone : (await setTimeZone(ctx, account.id, a["time-zone"])).timeZone;
      return {
        id: account.id,
        name: account.name,
        status: account.status,
        rpm: account.rpm,
        tpm: account.tpm,
        concurrency: account.concurrency,
        timeZone: tz,
      };
    },
  }),
};
