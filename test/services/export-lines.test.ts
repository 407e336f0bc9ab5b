import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csvHeader, csvLine, jsonLine } from "../../control-plane/src/exports/format.ts";
import { runExport } from "../../control-plane/src/exports/runner.ts";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// A usage export's lines are written by Postgres (exports/usage-lines-sql.ts), through COPY on Postgres or as rows
// of a query where there is no COPY (PGlite): each line must be exactly what csvLine (or jsonLine) makes of the same
// row, for rows with every awkward value (formula triggers, separators, quotes and line breaks in client text,
// negative and fractional money, nulls, empty and missing lists), across several batches; and for any text a
// client could send (a property).

let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext & { dataDir: string };
let accountId: string;
let keyId: string;
const dataDir = mkdtempSync(join(tmpdir(), "mg-export-lines-"));

beforeAll(async () => {
  db = await freshDatabase("explines");
  ctx = {
    prisma: db.db.prisma,
    copyOut: db.db.copyOut,
    snapshotChanged: () => undefined,
    masterKey: Buffer.alloc(32),
    dataDir,
  };
  accountId = (await db.db.prisma.account.create({ data: { name: "acme" } })).id;
  keyId = (
    await db.db.prisma.apiKey.create({
      data: {
        accountId,
        name: '=HYPERLINK("x"), main;',
        keyHash: "h",
        prefix: "p",
        allowedModels: [],
        ipAllowlist: [],
      },
    })
  ).id;
  const texts = ["plain", "=1+1", "-3", " @SUM(A1)", "a,b", 'quote "q"', "line\nbreak", "tab\tx", "ünï ✓", "x;=2", ""];
  await db.db.sql.transaction((tx) =>
    tx.query(
      `INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, upstream, status, error_code,
         prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, input_tokens, cache_write_5m_tokens,
         cache_write_1h_tokens, cost_micro, input_price, cached_input_price, cache_write_5m_price, cache_write_1h_price,
         output_price, estimated, end_user, tags, dropped, latency_ms, ttft_ms, stream, started_at)
       SELECT gen_random_uuid(), 'req_' || i || CASE WHEN i % 13 = 0 THEN ($3::text[])[i % 11 + 1] ELSE '' END,
         $1::uuid, CASE WHEN i % 9 = 0 THEN NULL ELSE $2::uuid END,
         CASE WHEN i % 4 = 0 THEN ($3::text[])[i % 11 + 1] ELSE 'acme-chat-2025-01-01' END, 'openai', 'up',
         CASE WHEN i % 10 = 0 THEN 429 ELSE 200 END, CASE WHEN i % 10 = 0 THEN 'rate_limited' END,
         i % 1000, i % 77, i % 5, i % 3, i % 900, i % 2, 0,
         CASE WHEN i % 17 = 0 THEN -i * 37 ELSE i::bigint * 1234567 END,
         CASE WHEN i % 6 = 0 THEN NULL ELSE 2500000 + (i % 4) * 0.25 END, 1250000.50, 3125000.25, 5000000, 10000000,
         i % 8 = 0, CASE WHEN i % 3 = 0 THEN ($3::text[])[i % 11 + 1] END,
         CASE WHEN i % 5 = 0 THEN ARRAY[($3::text[])[i % 11 + 1], 'team=x'] WHEN i % 7 = 0 THEN NULL ELSE '{}' END,
         CASE WHEN i % 11 = 0 THEN ARRAY['generationConfig.topK', ($3::text[])[i % 11 + 1]] ELSE '{}' END,
         i, CASE WHEN i % 2 = 0 THEN i % 500 END, i % 2 = 0,
         timestamptz '2026-04-01T00:00:00Z' + (i / 4) * interval '1.001 second'
       FROM generate_series(1, 25000) AS i`,
      [accountId, keyId, texts],
    ),
  );
});
afterAll(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await db?.drop();
});

/** Runs an export of the account's usage log and gives its file, checked to be ready with every row. */
async function exported(
  account: string,
  format: "csv" | "jsonl",
  rows: number,
  opts: { copy?: boolean; batchRows?: number } = {},
) {
  const job = await db.db.prisma.export.create({ data: { accountId: account, format, filters: {} } });
  await runExport(opts.copy === false ? { ...ctx, copyOut: undefined } : ctx, job.id, { batchRows: opts.batchRows });
  const done = await db.db.prisma.export.findUniqueOrThrow({ where: { id: job.id } });
  expect(done).toMatchObject({ status: "ready", rowCount: rows });
  return readFileSync(join(dataDir, "exports", done.filePath!), "utf8");
}

/** What format.ts makes of the account's rows, read through Prisma, in (started_at, id) order. */
async function expected(account: string, format: "csv" | "jsonl") {
  const rows = await db.db.prisma.usageLog.findMany({
    where: { accountId: account },
    orderBy: [{ startedAt: "asc" }, { id: "asc" }],
  });
  const names = new Map(
    (await db.db.prisma.apiKey.findMany({ where: { accountId: account } })).map((k) => [k.id, k.name]),
  );
  const line = format === "csv" ? csvLine : jsonLine;
  const body = rows.map((r) => line(r, r.apiKeyId ? (names.get(r.apiKeyId) ?? null) : null)).join("");
  return format === "csv" ? csvHeader() + body : body;
}

/** Compared line by line first, so a difference names its row. */
function sameLines(got: string, want: string, eol: string) {
  const g = got.split(eol);
  const w = want.split(eol);
  expect(g.length).toBe(w.length);
  for (let i = 0; i < w.length; i++) if (g[i] !== w[i]) expect({ line: i, got: g[i] }).toEqual({ line: i, got: w[i] });
  expect(got).toBe(want);
}

describe("usage export lines", () => {
  it("CSV through COPY: exactly csvLine's line for every row, in (started_at, id) order, across batches", async () => {
    sameLines(await exported(accountId, "csv", 25_000, { batchRows: 7_000 }), await expected(accountId, "csv"), "\r\n");
  });

  it("CSV without COPY (as on PGlite): the same lines, read as rows of a query", async () => {
    sameLines(
      await exported(accountId, "csv", 25_000, { copy: false, batchRows: 9_000 }),
      await expected(accountId, "csv"),
      "\r\n",
    );
  });

  it("JSON lines through COPY and without: exactly jsonLine's line for every row", async () => {
    const want = await expected(accountId, "jsonl");
    sameLines(await exported(accountId, "jsonl", 25_000, { batchRows: 6_000 }), want, "\n");
    sameLines(await exported(accountId, "jsonl", 25_000, { copy: false }), want, "\n");
  });

  it("any client text: the same lines as format.ts's (formula triggers, separators, spaces and any code point)", async () => {
    // Text made of segments shaped like what defusing looks for (a separator, spaces or quotes, a trigger), with each
    // of format.ts's space and trigger characters, their near misses and any code point between: every way a cell
    // can start a formula (or just miss one) comes up often.
    const chars = (s: string) => fc.constantFrom(...[...s]);
    const separator = chars(",;\t\r\n");
    const space = chars(
      '\u0001\t\n\u000b\f\r\u001f "\u007f\u0085\u009f\u00a0\u1680\u180e\u2000\u200a\u200b\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff' +
        "\u00a1\u180f\u200e\u2061\u3001\ufefe'",
    );
    const trigger = chars("=+-@\u2212\ufe62\ufe63\ufe66\ufe6b\uff0b\uff0d\uff1d\uff20\u2213\uff0c\ufe64:_aZ09");
    const segment = fc
      .tuple(
        fc.option(separator),
        fc.array(space, { maxLength: 3 }),
        fc.option(trigger),
        fc.string({ unit: "binary", maxLength: 3 }),
      )
      .map(([sep, spaces, t, rest]) => `${sep ?? ""}${spaces.join("")}${t ?? ""}${rest}`);
    const text = fc
      .array(segment, { maxLength: 4 })
      .map((parts) => parts.join(""))
      // Postgres text holds no NUL and no lone surrogate
      .filter((t) => !t.includes("\0") && !/[\ud800-\udfff]/u.test(t));
    const row = fc.record({
      requestId: text,
      model: text,
      errorCode: fc.option(text),
      endUser: fc.option(text),
      tags: fc.array(text, { maxLength: 3 }),
      dropped: fc.array(text, { maxLength: 2 }),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(text, fc.array(row, { minLength: 1, maxLength: 40 }), async (keyName, rows) => {
        const account = (await db.db.prisma.account.create({ data: { name: `prop-${n++}` } })).id;
        const key = await db.db.prisma.apiKey.create({
          data: {
            accountId: account,
            name: keyName,
            keyHash: `h${n}`,
            prefix: "p",
            allowedModels: [],
            ipAllowlist: [],
          },
        });
        await db.db.prisma.usageLog.createMany({
          data: rows.map((r, i) => ({
            ...r,
            requestId: `${r.requestId}${n}.${i}`, // (request id, time) is unique across accounts
            accountId: account,
            apiKeyId: i % 3 ? key.id : null,
            protocol: "openai",
            status: 200,
            latencyMs: i,
            costMicro: BigInt(i * 12_345 - 100_000),
            startedAt: new Date(Date.UTC(2026, 3, 2) + i),
          })),
        });
        sameLines(await exported(account, "csv", rows.length), await expected(account, "csv"), "\r\n");
        sameLines(await exported(account, "jsonl", rows.length), await expected(account, "jsonl"), "\n");
      }),
      { numRuns: 15 },
    );
  });
});
