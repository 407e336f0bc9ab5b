import { z } from "zod";
import { resolveAccount } from "../../services/accounts.ts";
import { listApiKeys, revokeApiKey } from "../../services/api-keys.ts";
import { amountSchema, ipAllowlistSchema, nameSchema, positiveIntText } from "../../services/inputs.ts";
import { issueApiKey } from "../../services/key-policy.ts";
import { formatAmount } from "../../services/money.ts";
import { accountArg, iso, keyIdArg, list } from "../args.ts";
import { command } from "../command.ts";

// API keys: issue (the value shown once), revoke, list.

const keyView = (k: Awaited<ReturnType<typeof listApiKeys>>[number]) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  status: k.status,
  quota: k.quotaMicro === null ? null : formatAmount(k.quotaMicro),
  spent: formatAmount(k.spentMicro),
  expiresAt: k.expiresAt?.toISOString() ?? null,
  allowedModels: k.allowedModels,
  ipAllowlist: k.ipAllowlist,
  rpm: k.rpm,
  tpm: k.tpm,
  concurrency: k.concurrency,
  createdAt: k.createdAt.toISOString(),
});

export const keyCommands = {
  "key create": command({
    usage:
      "--account NAME_OR_ID [--name N] [--models ID,ID] [--ip-allowlist CIDR,CIDR] [--quota AMOUNT] [--expires ISO8601] [--rpm N] [--tpm N] [--concurrency N]",
    args: z.object({
      account: accountArg,
      name: nameSchema.optional(),
      models: list.optional(),
      "ip-allowlist": list.pipe(ipAllowlistSchema).optional(),
      quota: amountSchema.optional(),
      expires: iso.optional(),
      rpm: positiveIntText.optional(),
      tpm: positiveIntText.optional(),
      concurrency: positiveIntText.optional(),
    }),
    options: { quotaCap: "quota", quotaMicro: "quota", expiresAt: "expires", allowedModels: "models" },
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      // The same rules as the API's (account active, expiry ahead, trial quota and expiry), as an operator.
      const { row, key } = await issueApiKey(
        ctx,
        account.id,
        {
          name: a.name,
          allowedModels: a.models,
          ipAllowlist: a["ip-allowlist"],
          quotaMicro: a.quota,
          expiresAt: a.expires,
          rpm: a.rpm,
          tpm: a.tpm,
          concurrency: a.concurrency,
        },
        { operator: true },
      );
      return { id: row.id, key, name: row.name, accountId: account.id };
    },
  }),
  "key revoke": command({
    usage: "ID",
    positional: "id",
    args: z.object({ id: keyIdArg }),
    run: async (ctx, a) => {
      const row = await revokeApiKey(ctx, a.id);
      return { id: row.id, status: row.status };
    },
  }),
  "key list": command({
    usage: "--account NAME_OR_ID",
    args: z.object({ account: accountArg }),
    run: async (ctx, a) => (await listApiKeys(ctx, (await resolveAccount(ctx, a.account)).id)).map(keyView),
  }),
};
