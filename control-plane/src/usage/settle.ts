import type { UsageEvent } from "@modelgate/data-plane/contract/index";
import type { Db } from "../db/client.ts";

/**
 * Settles usage events: the usage-log rows, the wallet debits, the ledger entries and the keys' spend, all in
 * one transaction keyed by request id. An event whose row exists already (a redelivery, a replay from a
 * data plane's spool) changes nothing, so nothing is ever charged twice. A batch costs one transaction and
 * one UPDATE per account and per key, however many events it holds. Returns how many events were new.
 */
export async function settleUsageBatch(prisma: Db, events: UsageEvent[]): Promise<number> {
  const unique = [...new Map(events.map((e) => [e.requestId, e])).values()];
  if (unique.length === 0) return 0;
  return prisma.$transaction(async (tx) => {
    const inserted = await tx.usageLog.createManyAndReturn({
      data: unique.map((e) => ({
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
        costMicro: BigInt(e.cost),
        latencyMs: e.latencyMs,
        ttftMs: e.ttftMs,
        stream: e.stream,
        clientIp: e.clientIp,
        startedAt: new Date(e.startedAt),
      })),
      skipDuplicates: true,
      select: { requestId: true },
    });
    const fresh = new Set(inserted.map((r) => r.requestId));
    const settled = unique.filter((e) => fresh.has(e.requestId));

    // Per account: one debit for the batch, one ledger row per charged call with its running balance.
    const byAccount = new Map<string, UsageEvent[]>();
    for (const e of settled) {
      if (BigInt(e.cost) === 0n) continue;
      const list = byAccount.get(e.accountId);
      if (list) list.push(e);
      else byAccount.set(e.accountId, [e]);
    }
    // Sorted ids: concurrent settlers lock rows in the same order, so they cannot deadlock.
    for (const accountId of [...byAccount.keys()].sort()) {
      const charges = byAccount.get(accountId)!;
      const total = charges.reduce((s, e) => s + BigInt(e.cost), 0n);
      const account = await tx.account.update({
        where: { id: accountId },
        data: { balanceMicro: { decrement: total }, spentMicro: { increment: total } },
        select: { balanceMicro: true },
      });
      let balance = account.balanceMicro + total;
      await tx.ledgerEntry.createMany({
        data: charges.map((e) => {
          const cost = BigInt(e.cost);
          balance -= cost;
          return { accountId, kind: "charge" as const, amountMicro: -cost, balanceAfterMicro: balance, apiKeyId: e.keyId, requestId: e.requestId };
        }),
      });
    }

    const byKey = new Map<string, { cost: bigint; last: Date }>();
    for (const e of settled) {
      const at = new Date(e.startedAt);
      const k = byKey.get(e.keyId);
      if (k) {
        k.cost += BigInt(e.cost);
        if (at > k.last) k.last = at;
      } else byKey.set(e.keyId, { cost: BigInt(e.cost), last: at });
    }
    for (const keyId of [...byKey.keys()].sort()) {
      const k = byKey.get(keyId)!;
      await tx.apiKey.updateMany({ where: { id: keyId }, data: { spentMicro: { increment: k.cost }, lastUsedAt: k.last } });
    }
    return settled.length;
  });
}

/** One event; false when it had been settled before. */
export const settleUsage = async (prisma: Db, e: UsageEvent): Promise<boolean> => (await settleUsageBatch(prisma, [e])) === 1;
