import { z } from "zod";
import { resolveAccount } from "../../services/accounts.ts";
import { setPriceContract } from "../../services/catalog.ts";
import { amountSchema } from "../../services/inputs.ts";
import { formatAmount } from "../../services/money.ts";
import { accountArg } from "../args.ts";
import { command } from "../command.ts";

// Price contracts: an account's own price for a model, per 1M tokens.

const opt = (v: bigint | undefined) => (v === undefined ? null : formatAmount(v));

export const contractCommands = {
  "contract set": command({
    usage:
      "--account NAME_OR_ID --model ID --input PRICE --output PRICE [--cached-input PRICE] [--cache-write-5m PRICE] [--cache-write-1h PRICE]",
    note: "prices per 1M tokens, in account currency",
    args: z.object({
      account: accountArg,
      model: z.string().min(1),
      input: amountSchema,
      output: amountSchema,
      "cached-input": amountSchema.optional(),
      "cache-write-5m": amountSchema.optional(),
      "cache-write-1h": amountSchema.optional(),
    }),
    options: {
      inputPrice: "input",
      outputPrice: "output",
      cachedInputPrice: "cached-input",
      cacheWrite5mPrice: "cache-write-5m",
      cacheWrite1hPrice: "cache-write-1h",
    },
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      await setPriceContract(ctx, {
        accountId: account.id,
        modelId: a.model,
        inputPrice: formatAmount(a.input),
        outputPrice: formatAmount(a.output),
        cachedInputPrice: opt(a["cached-input"]),
        cacheWrite5mPrice: opt(a["cache-write-5m"]),
        cacheWrite1hPrice: opt(a["cache-write-1h"]),
      });
      return { account: account.name, model: a.model, input: formatAmount(a.input), output: formatAmount(a.output) };
    },
  }),
};
