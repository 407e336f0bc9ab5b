import { z } from "zod";
import { encodeCursor } from "../../db/cursor.ts";
import { resolveAccount } from "../../services/accounts.ts";
import { formatAmount } from "../../services/money.ts";
import { MAX_PAGE, usagePage } from "../../stats/usage-log.ts";
import { accountArg, limitArg } from "../args.ts";
import { command } from "../command.ts";

// The usage log, newest first: the GraphQL `usage` query's service and page limit.

export const usageCommands = {
  "usage list": command({
    usage: "--account NAME_OR_ID [--limit N] [--after CURSOR]",
    note: `the latest usage-log rows; N is 1..${MAX_PAGE}, default 20; --after a row's cursor gives the rows older than it`,
    args: z.object({ account: accountArg, limit: limitArg(MAX_PAGE).optional(), after: z.string().min(1).optional() }),
    options: { first: "limit" },
    run: async (ctx, a) => {
      const account = await resolveAccount(ctx, a.account);
      const { nodes } = await usagePage(ctx, account.id, {}, a.limit ?? 20, a.after ?? null);
      return nodes.map((r) => ({
        // the next page starts after the last row's cursor (--after), as the `usage` query's pages do
        cursor: encodeCursor(r.startedAt, r.id),
        requestId: r.requestId,
        startedAt: r.startedAt.toISOString(),
        keyId: r.apiKeyId,
        model: r.model,
        protocol: r.protocol,
        status: r.status,
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
        reasoningTokens: r.reasoningTokens,
        cachedTokens: r.cachedTokens,
        inputTokens: r.inputTokens,
        cacheWrite5mTokens: r.cacheWrite5mTokens,
        cacheWrite1hTokens: r.cacheWrite1hTokens,
        cost: formatAmount(r.costMicro),
        costMicro: r.costMicro.toString(),
        estimated: r.estimated,
        endUser: r.endUser,
        tags: r.tags,
        dropped: r.dropped,
        latencyMs: r.latencyMs,
      }));
    },
  }),
};
