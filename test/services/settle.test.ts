import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type { UsageEvent } from "../../data-plane/src/contract/usage.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../control-plane/src/db/client.ts";
import { settleUsageBatch } from "../../control-plane/src/usage/settle.ts";
import { pgArray } from "../../control-plane/src/usage/usage-rows.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Settlement in plain SQL: rows, one ledger line per account per batch with running balances, wallet, key spend;
// exactly once per request id.

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

const today = new Date().toISOString().slice(0, 10);
// Every case runs twice: on days that have their partitions (today's and tomorrow's: the rows are written into
// them, COPY for the new ones), and on days before the partitions (their rows go to the default partition through
// the partitioned table, as after a failed write into a partition).
const variants = [
  {
    name: "into the day partitions",
    day: today,
    next: new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10),
  },
  { name: "through the partitioned table", day: "2026-11-23", next: "2026-11-24" },
];

describe.each(variants)("settleUsageBatch, rows written $name", ({ day, next }) => {
  /** A time of the variant's day. */
  const d = (time: string) => `${day}T${time}Z`;
  /** The i-th minute of the next day's test calls. */
  const at = (i: number) => new Date(Date.parse(`${next}T06:00:00.000Z`) + i * 60_000).toISOString();

  it("writes every row, debits each wallet once with one ledger line per account, adds key spend; a redelivery changes nothing", async () => {
    const a = await accountWithKeys(1_000_000n, 2);
    const b = await accountWithKeys(500n, 1);
    const events = [
      event(a.accountId, a.keyIds[0]!, "100", d("01:00:00.000")),
      event(a.accountId, a.keyIds[1]!, "250", d("01:00:02.000")),
      event(b.accountId, b.keyIds[0]!, "700", d("01:00:01.000")), // overdraws: settlement records what was served
      event(a.accountId, a.keyIds[0]!, "9007199254740993", d("01:00:03.000")), // beyond 2^53, exact
      event(a.accountId, a.keyIds[0]!, "0", d("01:00:04.000"), {
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
      startedAt: new Date(d("01:00:00.000")),
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

    // One usage line per account for the batch: its calls (the free one too), their summed cost, the balance
    // after it, and the batch id that is on each of the rows.
    const batchId = rows[0]!.batchId;
    expect(batchId).toMatch(/^[0-9a-f-]{36}$/);
    expect(rows.every((r) => r.batchId === batchId)).toBe(true);
    const lines = async (accountId: string) =>
      (await p.ledgerEntry.findMany({ where: { accountId } })).map((l) => [
        l.kind,
        l.batchId,
        l.calls,
        l.amountMicro,
        l.balanceAfterMicro,
        l.requestId,
        l.apiKeyId,
      ]);
    expect(await lines(a.accountId)).toEqual([["usage", batchId, 4, -spentA, 1_000_000n - spentA, null, null]]);
    expect(await lines(b.accountId)).toEqual([["usage", batchId, 1, -700n, -200n, null, null]]);

    const k0 = await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } });
    expect(k0.spentMicro).toBe(100n + 9_007_199_254_740_993n);
    expect(k0.lastUsedAt).toEqual(new Date(d("01:00:04.000")));

    // Redelivered (a replay from a spool, a claimed entry): nothing new, nothing moves.
    expect(await settleUsageBatch(fx.db, events)).toBe(0);
    expect(await p.account.findUniqueOrThrow({ where: { id: a.accountId }, select: { balanceMicro: true } })).toEqual({
      balanceMicro: 1_000_000n - spentA,
    });
    expect(await p.ledgerEntry.count({ where: { accountId: a.accountId } })).toBe(1);
    expect((await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).spentMicro).toBe(
      100n + 9_007_199_254_740_993n,
    );
  });

  it("keeps a key's last use at the latest call, whatever order batches arrive in", async () => {
    const a = await accountWithKeys(1000n, 1);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", d("02:00:00.000"))]);
    await settleUsageBatch(fx.db, [event(a.accountId, a.keyIds[0]!, "1", d("01:00:00.000"))]);
    expect((await fx.db.prisma.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).lastUsedAt).toEqual(
      new Date(d("02:00:00.000")),
    );
  });

  it("settles nothing of a batch that fails (the consumer retries it whole)", async () => {
    const a = await accountWithKeys(1000n, 1);
    const good = event(a.accountId, a.keyIds[0]!, "5", d("01:00:00.000"));
    const bad = event(randomUUID(), a.keyIds[0]!, "5", d("01:00:00.000")); // no such account
    await expect(settleUsageBatch(fx.db, [good, bad])).rejects.toThrow();
    expect(await fx.db.prisma.usageLog.count({ where: { requestId: good.requestId } })).toBe(0);
    expect((await fx.db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(1000n);
  });

  it("stores the breakdown, the unit prices, the estimate flag and the attribution", async () => {
    const a = await accountWithKeys(1000n, 1);
    const e = event(a.accountId, a.keyIds[0]!, "42", d("03:00:00.000"), {
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
    const e = event(a.accountId, a.keyIds[0]!, "1", d("03:30:00.000"), { tags });
    const plain = event(a.accountId, a.keyIds[0]!, "1", d("03:30:00.000"));
    expect(await settleUsageBatch(fx.db, [e, plain])).toBe(2);
    const rows = await fx.db.prisma.usageLog.findMany({ where: { requestId: { in: [e.requestId, plain.requestId] } } });
    expect(rows.find((r) => r.requestId === e.requestId)!.tags).toEqual(tags);
    expect(rows.find((r) => r.requestId === plain.requestId)!.tags).toEqual([]);
  });

  it("stores the parameters a translation dropped (x-modelgate-dropped) on the row; none from an older replica", async () => {
    const a = await accountWithKeys(1000n, 1);
    const dropped = ["generationConfig.topK", "tools[].web_search", "{a,b}"];
    const e = event(a.accountId, a.keyIds[0]!, "1", d("03:30:00.000"), { dropped });
    const old = event(a.accountId, a.keyIds[0]!, "1", d("03:30:00.000"));
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
      event(a.accountId, a.keyIds[0]!, "1", d("03:40:00.000"), {
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
    const nulls = event(a.accountId, a.keyIds[0]!, "1", d("03:40:00.000"), {
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
               (SELECT calls FROM ledger_entries WHERE batch_id = l.batch_id) AS ledger_calls
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
        ledger_calls: events.length + 1,
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
    const estimate = event(a.accountId, a.keyIds[0]!, "300", d("04:10:00.000"), {
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
    // The two corrections (+120, -200) are one line, with the batch id of the rows they corrected.
    const ledger = await p.ledgerEntry.findMany({ where: { accountId: a.accountId }, orderBy: { createdAt: "asc" } });
    expect(ledger.reduce((s, l) => s + l.amountMicro, 0n)).toBe(-520n);
    expect(ledger.map((l) => [l.kind, l.calls, l.amountMicro, l.balanceAfterMicro])).toEqual([
      ["usage", 2, -600n, 9_400n],
      ["correction", 2, 80n, 9_480n],
    ]);
    expect(new Set(ledger.map((l) => l.batchId))).toEqual(new Set([row.batchId]));
    expect((await p.apiKey.findUniqueOrThrow({ where: { id: a.keyIds[0]! } })).spentMicro).toBe(520n);
    const hourly = await p.usageHourly.findMany({ where: { accountId: a.accountId } });
    expect(hourly.reduce((s, h) => s + h.costMicro, 0n)).toBe(520n);
    expect(hourly.reduce((s, h) => s + h.promptTokens, 0n)).toBe(110n);
  });

  it("reconciles to the micro-unit: each batch's ledger lines = its rows' cost per account, wallet = top-ups + ledger", async () => {
    const p = fx.db.prisma;
    const accounts = [await accountWithKeys(0n, 2), await accountWithKeys(0n, 1), await accountWithKeys(0n, 1)];
    for (const a of accounts)
      await p.$transaction([
        p.account.update({ where: { id: a.accountId }, data: { balanceMicro: { increment: 50_000n } } }),
        p.ledgerEntry.create({
          data: { accountId: a.accountId, kind: "topup", amountMicro: 50_000n, balanceAfterMicro: 50_000n },
        }),
      ]);
    // 60 calls over three accounts in four batches; every fifth is a cut stream (estimated), every seventh free.
    const calls = Array.from({ length: 60 }, (_, i) => {
      const a = accounts[i % 3]!;
      return event(a.accountId, a.keyIds[i % a.keyIds.length]!, String(i % 7 === 0 ? 0 : 10 + i), at(i), {
        estimated: i % 5 === 0,
      });
    });
    const exactOf = (e: UsageEvent, i: number) => ({ ...e, estimated: false, cost: String(i % 2 ? 3 * i : 1) });
    for (let b = 0; b < 4; b++) expect(await settleUsageBatch(fx.db, calls.slice(b * 15, b * 15 + 15))).toBe(15);
    // The exact counts of half the estimates arrive in a batch with calls already settled (a replay).
    const estimates = calls.map((e, i) => [e, i] as const).filter(([e]) => e.estimated);
    const firstHalf = estimates.slice(0, 6).map(([e, i]) => exactOf(e, i));
    await settleUsageBatch(fx.db, [...firstHalf, ...calls.slice(0, 10)]);

    const state = async () => {
      const ids = accounts.map((a) => a.accountId);
      const rows = await p.usageLog.findMany({ where: { accountId: { in: ids } } });
      const ledger = await p.ledgerEntry.findMany({ where: { accountId: { in: ids } } });
      const wallets = await p.account.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
      return { rows, ledger, wallets };
    };
    const reconciles = async () => {
      const { rows, ledger, wallets } = await state();
      expect(rows).toHaveLength(calls.length);
      // per batch and account: the lines sum to minus the rows' cost, and the usage line counts its rows
      const sums = new Map<string, { rows: bigint; lines: bigint; count: number; calls: number }>();
      const of = (batch: string | null, account: string) => {
        const id = `${batch}/${account}`;
        if (!sums.has(id)) sums.set(id, { rows: 0n, lines: 0n, count: 0, calls: 0 });
        return sums.get(id)!;
      };
      for (const r of rows) {
        expect(r.batchId).not.toBeNull();
        const s = of(r.batchId, r.accountId);
        s.rows += r.costMicro;
        s.count++;
      }
      for (const l of ledger.filter((l) => l.kind !== "topup")) {
        expect(["usage", "correction"]).toContain(l.kind);
        const s = of(l.batchId, l.accountId);
        s.lines += l.amountMicro;
        if (l.kind === "usage") s.calls += l.calls!;
      }
      for (const [id, s] of sums) {
        expect(-s.lines, id).toBe(s.rows);
        // an account whose calls in a batch were all free has no line (nothing moved)
        expect(s.calls === s.count || (s.calls === 0 && s.rows === 0n), id).toBe(true);
      }
      // each wallet is its top-up plus its ledger lines, and the last batch's lines end at the wallet's balance
      for (const w of wallets) {
        const mine = ledger.filter((l) => l.accountId === w.id);
        expect(mine.reduce((s, l) => s + l.amountMicro, 0n)).toBe(w.balanceMicro);
        expect(w.spentMicro).toBe(rows.filter((r) => r.accountId === w.id).reduce((s, r) => s + r.costMicro, 0n));
        const latest = Math.max(...mine.map((l) => l.createdAt.getTime()));
        const lastWritten = mine.filter((l) => l.createdAt.getTime() === latest);
        expect(lastWritten.map((l) => l.balanceAfterMicro)).toContain(w.balanceMicro);
      }
      return { rows: rows.length, lines: ledger.length, balances: wallets.map((w) => w.balanceMicro) };
    };
    const before = await reconciles();
    // top-ups, a usage line per account per batch, a correction line per account and batch of the rows corrected
    // (a correction that costs the same as its estimate moves nothing and writes nothing)
    const corrected = estimates.slice(0, 6).filter(([e, i]) => exactOf(e, i).cost !== e.cost);
    const correctionLines = new Set(corrected.map(([e, i]) => `${e.accountId}/${Math.floor(i / 15)}`)).size;
    expect(correctionLines).toBeGreaterThan(3);
    expect(before.lines).toBe(3 + 4 * 3 + correctionLines);

    // A replay of a whole batch, and of the corrections, changes nothing.
    expect(await settleUsageBatch(fx.db, calls.slice(15, 30))).toBe(0);
    expect(await settleUsageBatch(fx.db, firstHalf)).toBe(0);
    expect(await reconciles()).toEqual(before);

    // The other estimates are replaced later, one batch of corrections after another: still to the micro-unit.
    const rest = estimates.slice(6).map(([e, i]) => exactOf(e, i));
    await settleUsageBatch(fx.db, rest.slice(0, 3));
    await settleUsageBatch(fx.db, [...rest, ...calls.slice(40)]);
    const after = await reconciles();
    expect(after.rows).toBe(before.rows);
    const { rows } = await state();
    expect(rows.filter((r) => r.estimated)).toEqual([]);
    expect(rows.reduce((s, r) => s + r.costMicro, 0n)).toBe(
      calls.reduce((s, e, i) => s + BigInt(e.estimated ? exactOf(e, i).cost : e.cost), 0n),
    );
  });

  it("refuses a call whose row is still in the unpartitioned log being copied, and settles it once moved", async () => {
    // A database opened now (settlement remembers per database that the old log is gone).
    const db = await openDatabase({ databaseUrl: fx.url });
    const a = await accountWithKeys(10_000n, 1);
    const estimate = event(a.accountId, a.keyIds[0]!, "300", d("06:00:00.000"), { estimated: true });
    const exact = { ...estimate, cost: "420", estimated: false };
    const q = (sql: string) => db.sql.transaction((tx) => tx.query(sql));
    try {
      // The estimate was settled before the partitions (a per-call ledger row then); its row waits to be copied.
      await q(`CREATE TABLE usage_logs_unpartitioned (LIKE usage_logs INCLUDING DEFAULTS)`);
      await q(`INSERT INTO usage_logs_unpartitioned (id, request_id, account_id, api_key_id, model, protocol, status,
          cost_micro, latency_ms, started_at, estimated)
        VALUES (gen_random_uuid(), '${estimate.requestId}', '${a.accountId}', '${a.keyIds[0]}', 'm', 'openai', 499,
          300, 1, '${estimate.startedAt}', true)`);
      await db.prisma.account.update({ where: { id: a.accountId }, data: { balanceMicro: { decrement: 300n } } });
      // Its exact count (or a replay) arrives meanwhile: refused whole, nothing written, nothing charged.
      await expect(settleUsageBatch(db, [exact])).rejects.toThrow(/still in the usage log being copied/);
      expect(await db.prisma.usageLog.count({ where: { requestId: estimate.requestId } })).toBe(0);
      expect((await db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(9_700n);
      // The copy moves the row (one transaction), then the retried batch replaces the estimate once.
      await q(`WITH moved AS (DELETE FROM usage_logs_unpartitioned RETURNING *)
        INSERT INTO usage_logs SELECT * FROM moved`);
      expect(await settleUsageBatch(db, [exact])).toBe(0);
      expect(await settleUsageBatch(db, [exact, estimate])).toBe(0);
      expect((await db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(9_580n);
      // a row from before batches has no batch id: its correction line has none either
      const lines = await db.prisma.ledgerEntry.findMany({ where: { accountId: a.accountId } });
      expect(lines.map((l) => [l.kind, l.batchId, l.calls, l.amountMicro])).toEqual([["correction", null, 1, -120n]]);
    } finally {
      await q(`DROP TABLE IF EXISTS usage_logs_unpartitioned`);
      await db.close();
    }
  });

  it("prefers the exact event when both arrive in one batch", async () => {
    const a = await accountWithKeys(1000n, 1);
    const estimate = event(a.accountId, a.keyIds[0]!, "30", d("05:00:00.000"), { estimated: true });
    expect(await settleUsageBatch(fx.db, [estimate, { ...estimate, estimated: false, cost: "35" }, estimate])).toBe(1);
    expect(await fx.db.prisma.usageLog.findFirstOrThrow({ where: { requestId: estimate.requestId } })).toMatchObject({
      costMicro: 35n,
      estimated: false,
    });
    expect((await fx.db.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).balanceMicro).toBe(965n);
  });
});
