import { randomUUID } from "node:crypto";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Settlement in plain SQL: rows, running ledger balances, wallet, key spend; exactly once per request id.

let fx: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  fx = await freshDatabase("settle");
}, 60_000);
afterAll(async () => {
  await fx?.drop();
});

async function accountWithKeys(balance: bigint, keys: number) {
  const p = fx.db.prisma;
  const account = await p.account.create({ data: { name: `a-${randomUUID()}`, balanceMicro: balance } as never });
  const ids: string[] = [];
  for (let i = 0; i < keys; i++) {
    ids.push((await p.apiKey.create({ data: { accountId: account.id, name: `k${i}`, keyHash: randomUUID(), prefix: "sk-test" } as never })).id);
  }
  return { accountId: account.id, keyIds: ids };
}

const event = (accountId: string, keyId: string, cost: string, startedAt: string, extra: Partial<UsageEvent> = {}): UsageEvent => ({
  requestId: `req_${randomUUID()}`,
  keyId,
  accountId,
  model: "m-2025-01-01",
  protocol: "openai",
  upstream: "u",
  stream: false,
  promptTokens: 10,
  completionTokens: 20,
  reasoningTokens: 3,
  cachedTokens: 4,
  cost,
  status: 200,
  errorCode: null,
  latencyMs: 12,
  ttftMs: 5,
  clientIp: "10.0.0.1",
  startedAt,
  ...extra,
});

describe("settleUsageBatch", () => {
  it("writes every row, debits each wallet once with a running ledger, adds key spend; a redelivery changes nothing", async () => {
    const a = await accountWithKeys(1_000_000n, 2);
    const b = await accountWithKeys(500n, 1);
    const events = [
      event(a.accountId, a.keyIds[0]!, "100", "2026-11-23T01:00:00.000Z"),
      event(a.accountId, a.keyIds[1]!, "250", "2026-11-23T01:00:02.000Z"),
      event(b.accountId, b.keyIds[0]!, "700", "2026-11-23T01:00:01.000Z"), // overdraws: settlement records what was served
      event(a.accountId, a.keyIds[0]!, "9007199254740993", "2026-11-23T01:00:03.000Z"), // beyond 2^53, exact
      event(a.accountId, a.keyIds[0]!, "0", "2026-11-23T01:00:04.000Z", { status: 502, errorCode: "upstream_error", ttftMs: null, upstream: null }),
    ];
    expect(await settleUsageBatch(fx.db, [...events, events[0]!])).toBe(5);
    const p = fx.db.prisma;

    const rows = await p.usageLog.findMany({ where: { requestId: { in: events.map((e) => e.requestId) } } });
    expect(rows).toHaveLength(5);
    const failed = rows.find((r) => r.requestId === events[4]!.requestId)!;
    expect(failed).toMatchObject({ status: 502, errorCode: "upstream_error", costMicro: 0n, ttftMs: null, upstream: null });
    expect(rows.find((r) => r.requestId === events[0]!.requestId)).toMatchObject({
      accountId: a.accountId,
      apiKeyId: a.keyIds[0],
      promptTokens: 10,
      completionTokens: 20,
      reasoningTokens: 3,
      cachedTokens: 4,
      costMicro: 100n,
      latencyMs: 12,
      ttftMs: 5,
      clientIp: "10.0.0.1",
      startedAt: new Date("2026-11-23T01:00:00.000Z"),
    });

    const spentA = 100n + 250n + 9_007_199_254_740_993n;
    expect(await p.account.findUniqueOrThrow({ where: { id: a.accountId }, select: { balanceMicro: true, spentMicro: true } })).toEqual({ balanceMicro: 1_000_000n - spentA, spentMicro: spentA });
    expect(await p.account.findUniqueOrThrow({ where: { id: b.accountId }, select: { balanceMicro: true } })).toEqual({ balanceMicro: -200n });

    // One charge per charged call, in batch order, each with the balance right after it; none for the free call.
    const ledger = await p.ledgerEntry.findMany({ where: { accountId: a.accountId }, orderBy: { balanceAfterMicro: "desc" } });
    expect(ledger.map((l) => [l.kind, l.amountMicro, l.balanceAfterMicro, l.requestId, l.apiKeyId])).toEqual([
      ["charge", -100n, 999_900n, events[0]!.requestId, a.keyIds[0]],
      ["charge", -250n, 999_650n, events[1]!.requestId, a.keyIds[1]],
      ["charge", -9_007_199_254_740_993n, 999_650n - 9_007_199_254_740_993n, events[3]!.requestId, a.keyIds[0]],
    ]);

    const k0 = await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } });
    expect(k0.spentMicro).toBe(100n + 9_007_199_254_740_993n);
    expect(k0.lastUsedAt).toEqual(new Date("2026-11-23T01:00:04.000Z"));

    // Redelivered (a replay from a spool, a claimed entry): nothing new, nothing moves.
    expect(await settleUsageBatch(fx.db, events)).toBe(0);
    expect(await p.account.findUniqueOrThrow({ where: { id: a.accountId }, select: { balanceMicro: true } })).toEqual({ balanceMicro: 1_000_000n - spentA });
    expect(await p.ledgerEntry.count({ where: { accountId: a.accountId } })).toBe(3);
    expect((await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).spentMicro).toBe(100n + 9_007_199_254_740_993n);
  });

  it("keeps a key's last use at the latest call, whatever order batches arrive in", async () => {
    const a = await accountWithKeys(1000n, 1);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T02:00:00.000Z")]);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T01:00:00.000Z")]);
    expect((await fx.db.prisma.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).lastUsedAt).toEqual(new Date("2026-11-23T02:00:00.000Z"));
  });

  it("settles nothing of a batch that fails (the consumer retries it whole)", async () => {
    const a = await accountWithKeys(1000n, 1);
    const good = event(a.accountId, a.keyIds[0]!, "5", "2026-11-23T01:00:00.000Z");
    const bad = event(randomUUID(), a.keyIds[0]!, "5", "2026-11-23T01:00:00.000Z"); // no such account
    await expect(settleUsageBatch(fx.db, [good, bad])).rejects.toThrow();
    expect(await fx.db.prisma.usageLog.count({ where: { requestId: good.requestId } })).toBe(0);
    expect((await fx.db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(1000n);
  });
});
