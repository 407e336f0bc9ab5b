import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgArray, settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
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
    ids.push(
      (
        await p.apiKey.create({
          data: { accountId: account.id, name: `k${i}`, keyHash: randomUUID(), prefix: "sk-test" } as never,
        })
      ).id,
    );
  }
  return { accountId: account.id, keyIds: ids };
}

const event = (
  accountId: string,
  keyId: string,
  cost: string,
  startedAt: string,
  extra: Partial<UsageEvent> = {},
): UsageEvent => ({
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
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
  prices: null,
  estimated: false,
  endUser: null,
  tags: [],
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
      event(a.accountId, a.keyIds[0]!, "0", "2026-11-23T01:00:04.000Z", {
        status: 502,
        errorCode: "upstream_error",
        ttftMs: null,
        upstream: null,
      }),
    ];
    expect(await settleUsageBatch(fx.db, [...events, events[0]!])).toBe(5);
    const p = fx.db.prisma;

    const rows = await p.usageLog.findMany({ where: { requestId: { in: events.map((e) => e.requestId) } } });
    expect(rows).toHaveLength(5);
    const failed = rows.find((r) => r.requestId === events[4]!.requestId)!;
    expect(failed).toMatchObject({
      status: 502,
      errorCode: "upstream_error",
      costMicro: 0n,
      ttftMs: null,
      upstream: null,
    });
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
    expect(
      await p.account.findUniqueOrThrow({
        where: { id: a.accountId },
        select: { balanceMicro: true, spentMicro: true },
      }),
    ).toEqual({ balanceMicro: 1_000_000n - spentA, spentMicro: spentA });
    expect(await p.account.findUniqueOrThrow({ where: { id: b.accountId }, select: { balanceMicro: true } })).toEqual({
      balanceMicro: -200n,
    });

    // One charge per charged call, in batch order, each with the balance right after it; none for the free call.
    const ledger = await p.ledgerEntry.findMany({
      where: { accountId: a.accountId },
      orderBy: { balanceAfterMicro: "desc" },
    });
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
    expect(await p.account.findUniqueOrThrow({ where: { id: a.accountId }, select: { balanceMicro: true } })).toEqual({
      balanceMicro: 1_000_000n - spentA,
    });
    expect(await p.ledgerEntry.count({ where: { accountId: a.accountId } })).toBe(3);
    expect((await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).spentMicro).toBe(
      100n + 9_007_199_254_740_993n,
    );
  });

  it("keeps a key's last use at the latest call, whatever order batches arrive in", async () => {
    const a = await accountWithKeys(1000n, 1);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T02:00:00.000Z")]);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T01:00:00.000Z")]);
    expect((await fx.db.prisma.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).lastUsedAt).toEqual(
      new Date("2026-11-23T02:00:00.000Z"),
    );
  });

  it("settles nothing of a batch that fails (the consumer retries it whole)", async () => {
    const a = await accountWithKeys(1000n, 1);
    const good = event(a.accountId, a.keyIds[0]!, "5", "2026-11-23T01:00:00.000Z");
    const bad = event(randomUUID(), a.keyIds[0]!, "5", "2026-11-23T01:00:00.000Z"); // no such account
    await expect(settleUsageBatch(fx.db, [good, bad])).rejects.toThrow();
    expect(await fx.db.prisma.usageLog.count({ where: { requestId: good.requestId } })).toBe(0);
    expect((await fx.db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(1000n);
  });

  it("stores the breakdown, the unit prices, the estimate flag and the attribution", async () => {
    const a = await accountWithKeys(1000n, 1);
    const e = event(a.accountId, a.keyIds[0]!, "42", "2026-11-23T03:00:00.000Z", {
      promptTokens: 100,
      cachedTokens: 10,
      cacheWrite5mTokens: 20,
      cacheWrite1hTokens: 30,
      completionTokens: 7,
      reasoningTokens: 2,
      prices: {
        input: "1000001",
        cachedInput: "100000",
        cacheWrite5m: "1250001.25",
        cacheWrite1h: "2000002",
        output: "3000000",
      },
      endUser: "user-7",
      tags: ["team=search", "canary"],
    });
    await settleUsageBatch(fx.db, [e]);
    const row = await fx.db.prisma.usageLog.findFirstOrThrow({ where: { requestId: e.requestId } });
    expect(row).toMatchObject({
      inputTokens: 40,
      cachedTokens: 10,
      cacheWrite5mTokens: 20,
      cacheWrite1hTokens: 30,
      completionTokens: 7,
      reasoningTokens: 2,
      estimated: false,
      endUser: "user-7",
      tags: ["team=search", "canary"],
    });
    expect(
      [row.inputPrice, row.cachedInputPrice, row.cacheWrite5mPrice, row.cacheWrite1hPrice, row.outputPrice].map((d) =>
        d?.toString(),
      ),
    ).toEqual(["1000001", "100000", "1250001.25", "2000002", "3000000"]);
  });

  it("stores any tag text as given (quotes, backslashes, braces, commas, NULL, empty)", async () => {
    const a = await accountWithKeys(1000n, 1);
    const tags = ['say "hi"', "back\\slash", "{a,b}", "NULL", " spaced ", "", "ünï=cödé"];
    const e = event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:30:00.000Z", { tags });
    const plain = event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:30:00.000Z");
    expect(await settleUsageBatch(fx.db, [e, plain])).toBe(2);
    const rows = await fx.db.prisma.usageLog.findMany({ where: { requestId: { in: [e.requestId, plain.requestId] } } });
    expect(rows.find((r) => r.requestId === e.requestId)!.tags).toEqual(tags);
    expect(rows.find((r) => r.requestId === plain.requestId)!.tags).toEqual([]);
  });

  it("stores the parameters a translation dropped (x-modelgate-dropped) on the row; none from an older replica", async () => {
    const a = await accountWithKeys(1000n, 1);
    const dropped = ["generationConfig.topK", "tools[].web_search", "{a,b}"];
    const e = event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:30:00.000Z", { dropped });
    const old = event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:30:00.000Z");
    expect(await settleUsageBatch(fx.db, [e, old])).toBe(2);
    const rows = await fx.db.prisma.usageLog.findMany({ where: { requestId: { in: [e.requestId, old.requestId] } } });
    expect(rows.find((r) => r.requestId === e.requestId)!.dropped).toEqual(dropped);
    expect(rows.find((r) => r.requestId === old.requestId)!.dropped).toEqual([]);
  });

  it("stores any text in every text column as given (request id, model, protocol, upstream, error, IP, end user)", async () => {
    const a = await accountWithKeys(1000n, 1);
    const hostile = [
      'say "hi"',
      "back\\slash",
      "ends\\",
      "{a,b}",
      "NULL",
      "null",
      " spaced ",
      "",
      "ünï=cödé",
      "tab\tnew\nline",
    ];
    // each event carries one hostile string in every text column; the last has the nullable ones null
    const events = hostile.map((text, i) =>
      event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:40:00.000Z", {
        requestId: `req_${i}_${text}_${randomUUID()}`,
        model: text,
        protocol: text as UsageEvent["protocol"],
        upstream: text,
        errorCode: text,
        clientIp: text,
        endUser: text,
        tags: [text, `${text}2`],
      }),
    );
    const nulls = event(a.accountId, a.keyIds[0]!, "1", "2026-11-23T03:40:00.000Z", {
      upstream: null,
      errorCode: null,
      clientIp: null,
      endUser: null,
    });
    expect(await settleUsageBatch(fx.db, [...events, nulls])).toBe(events.length + 1);
    const columns = async (requestId: string) =>
      (
        await fx.db.sql.transaction((tx) =>
          tx.query<Record<string, unknown>>(
            `SELECT l.request_id, l.model, l.protocol, l.upstream, l.error_code, l.client_ip, l.end_user, l.tags,
               (SELECT request_id FROM ledger_entries WHERE request_id = l.request_id) AS ledger_request_id
             FROM usage_logs l WHERE l.request_id = $1`,
            [requestId],
          ),
        )
      )[0];
    for (const [i, e] of events.entries())
      expect(await columns(e.requestId), `event ${i}: ${JSON.stringify(hostile[i])}`).toEqual({
        request_id: e.requestId,
        model: hostile[i],
        protocol: hostile[i],
        upstream: hostile[i],
        error_code: hostile[i],
        client_ip: hostile[i],
        end_user: hostile[i],
        tags: [hostile[i], `${hostile[i]}2`],
        ledger_request_id: e.requestId,
      });
    expect(await columns(nulls.requestId)).toMatchObject({
      upstream: null,
      error_code: null,
      client_ip: null,
      end_user: null,
      tags: [],
    });
  });

  it("writes array parameters Postgres reads back as the same values (pgArray)", async () => {
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom('"', "\\", "{", "}", ",", " ", "\t", "\n", "N", "U", "L", "a", "é", "😀") }),
      fc.string({ unit: "binary" }).filter((t) => !t.includes("\0")),
      fc.constantFrom("NULL", "null", "", " ", '""', "{}"),
    );
    await fx.db.sql.transaction(async (tx) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.option(text)),
          fc.array(fc.oneof(fc.integer(), fc.boolean(), fc.constant(null))),
          async (texts, scalars) => {
            const [row] = await tx.query<{ t: (string | null)[]; i: (number | null)[]; b: (boolean | null)[] }>(
              `SELECT $1::text[] AS t, $2::int[] AS i, $3::bool[] AS b`,
              [
                pgArray(texts, (t) => t),
                pgArray(scalars, (v) => (typeof v === "boolean" ? null : v)),
                pgArray(scalars, (v) => (typeof v === "number" ? null : v)),
              ],
            );
            expect(row!.t).toEqual(texts);
            expect(row!.i).toEqual(scalars.map((v) => (typeof v === "boolean" ? null : v)));
            expect(row!.b).toEqual(scalars.map((v) => (typeof v === "number" ? null : v)));
          },
        ),
        { numRuns: 300 },
      );
    });
  });

  it("replaces an estimate with the exact count once, settling the difference in wallet, ledger, key and rollup", async () => {
    const a = await accountWithKeys(10_000n, 1);
    const estimate = event(a.accountId, a.keyIds[0]!, "300", "2026-11-23T04:10:00.000Z", {
      status: 499,
      errorCode: "client_closed",
      estimated: true,
      promptTokens: 50,
      completionTokens: 5,
    });
    const exact = { ...estimate, cost: "420", estimated: false, promptTokens: 60, completionTokens: 40 };
    const cheaper = { ...estimate, requestId: `req_${randomUUID()}` };
    const cheaperExact = { ...cheaper, cost: "100", estimated: false };
    const p = fx.db.prisma;
    expect(await settleUsageBatch(fx.db, [estimate, cheaper])).toBe(2);
    // The exact counts arrive (twice: a redelivery), and an estimate again after them: applied once, never undone.
    expect(await settleUsageBatch(fx.db, [exact, cheaperExact])).toBe(0);
    expect(await settleUsageBatch(fx.db, [exact, estimate, cheaperExact])).toBe(0);
    const row = await p.usageLog.findFirstOrThrow({ where: { requestId: estimate.requestId } });
    expect(row).toMatchObject({ costMicro: 420n, promptTokens: 60, completionTokens: 40, estimated: false });
    expect((await p.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(
      10_000n - 420n - 100n,
    );
    const ledger = await p.ledgerEntry.findMany({ where: { accountId: a.accountId } });
    expect(ledger.reduce((s, l) => s + l.amountMicro, 0n)).toBe(-520n);
    expect(ledger.find((l) => l.requestId === `${cheaper.requestId}:exact`)).toMatchObject({
      kind: "refund",
      amountMicro: 200n,
    });
    expect((await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).spentMicro).toBe(520n);
    const hourly = await p.usageHourly.findMany({ where: { accountId: a.accountId } });
    expect(hourly.reduce((s, h) => s + h.costMicro, 0n)).toBe(520n);
    expect(hourly.reduce((s, h) => s + h.promptTokens, 0n)).toBe(110n);
  });

  it("prefers the exact event when both arrive in one batch", async () => {
    const a = await accountWithKeys(1000n, 1);
    const estimate = event(a.accountId, a.keyIds[0]!, "30", "2026-11-23T05:00:00.000Z", { estimated: true });
    expect(await settleUsageBatch(fx.db, [estimate, { ...estimate, estimated: false, cost: "35" }, estimate])).toBe(1);
    expect(await fx.db.prisma.usageLog.findFirstOrThrow({ where: { requestId: estimate.requestId } })).toMatchObject({
      costMicro: 35n,
      estimated: false,
    });
    expect((await fx.db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(965n);
  });
});
