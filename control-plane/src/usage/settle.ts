import type { UsageEvent } from "@modelgate/data-plane/contract/index";
import type { Db } from "../db/client.ts";

/**
 * Settles one usage event: the usage-log row, the wallet debit, the ledger entry and the key's spend, in one
 * transaction keyed by request id. A redelivered event finds its row and changes nothing, so nothing is ever
 * charged twice. Returns false for such a duplicate.
 */
export async function settleUsage(prisma: Db, e: UsageEvent): Promise<boolean> {
  const cost = BigInt(e.cost);
  return prisma.$transaction(async (tx) => {
    const inserted = await tx.usageLog.createMany({
      data: [
        {
          requestId: e.requestId,
          accountId: e.accountId,
          apiKeyId: e.keyId,
          model: e.model,
          protocol: e.protocol,
          upstream: e.upstream,
          status: e.status,
          errorCode: e.errorCode,
          promptTokens: e.promptTokens,
          completionTokens: e.completionTokens,
          reasoningTokens: e.reasoningTokens,
          cachedTokens: e.cachedTokens,
          costMicro: cost,
          latencyMs: e.latencyMs,
          ttftMs: e.ttftMs,
          stream: e.stream,
          clientIp: e.clientIp,
          startedAt: new Date(e.startedAt),
        },
      ],
      skipDuplicates: true,
    });
    if (inserted.count === 0) return false;
    if (cost > 0n) {
      const account = await tx.account.update({
        where: { id: e.accountId },
        data: { balanceMicro: { decrement: cost }, spentMicro: { increment: cost } },
        select: { balanceMicro: true },
      });
      await tx.ledgerEntry.create({
        data: {
          accountId: e.accountId,
          kind: "charge",
          amountMicro: -cost,
          balanceAfterMicro: account.balanceMicro,
          apiKeyId: e.keyId,
          requestId: e.requestId,
        },
      });
    }
    await tx.apiKey.updateMany({
      where: { id: e.keyId },
      data: { spentMicro: { increment: cost }, lastUsedAt: new Date(e.startedAt) },
    });
    return true;
  });
}
