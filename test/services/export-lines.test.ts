import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csvHeader, csvLine } from "../../control-plane/src/exports/format.ts";
import { runExport } from "../../control-plane/src/exports/runner.ts";
import type { ServiceContext } from "../../control-plane/src/services/context.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// A usage CSV export formats its numbers, money and booleans in Postgres and its client text in the control
// plane (exports/runner.ts, usageCsvSource): each line must be exactly what csvLine makes of the same row, for
// rows with every awkward value (formula triggers, separators, quotes and line breaks in client text, negative and
// fractional money, nulls, empty and missing lists), across several batches.

let db: Awaited<ReturnType<typeof freshDatabase>>;
let ctx: ServiceContext & { dataDir: string };
let accountId: string;
let keyId: string;
const dataDir = mkdtempSync(join(tmpdir(), "mg-export-lines-"));

beforeAll(async () => {
  db = await freshDatabase("explines");
  ctx = { prisma: db.db.prisma, snapshotChanged: () => undefined, masterKey: Buffer.alloc(32), dataDir };
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

describe("usage CSV export", () => {
  it("writes exactly csvLine's line for every row, in (started_at, id) order, across batches", async () => {
    const job = await db.db.prisma.export.create({ data: { accountId, format: "csv", filters: {} } });
    await runExport(ctx, job.id);
    const done = await db.db.prisma.export.findUniqueOrThrow({ where: { id: job.id } });
    expect(done).toMatchObject({ status: "ready", rowCount: 25_000 });
    const file = readFileSync(join(dataDir, "exports", done.filePath!), "utf8");
    const rows = await db.db.prisma.usageLog.findMany({
      where: { accountId },
      orderBy: [{ startedAt: "asc" }, { id: "asc" }],
    });
    const key = await db.db.prisma.apiKey.findUniqueOrThrow({ where: { id: keyId } });
    const expected = csvHeader() + rows.map((r) => csvLine(r, r.apiKeyId ? key.name : null)).join("");
    // compared line by line first, so a difference names its row
    const got = file.split("\r\n");
    const want = expected.split("\r\n");
    expect(got.length).toBe(want.length);
    for (let i = 0; i < want.length; i++)
      if (got[i] !== want[i]) expect({ line: i, got: got[i] }).toEqual({ line: i, got: want[i] });
    expect(file).toBe(expected);
  });
});
