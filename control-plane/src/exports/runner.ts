import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { audit, type AuditDb } from "../audit/record.ts";
import { Prisma, type ExportFormat } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { AppError } from "../services/errors.ts";
import { usageConditions, usageWhere, type UsageFilter } from "../stats/usage-log.ts";
import {
  AUDIT_COLUMNS,
  auditRecord,
  auditWhere,
  loadAuditFilter,
  storeAuditFilter,
  type AuditFilter,
  type StoredAuditFilter,
  maskOperatorActors,
} from "../audit/query.ts";
import { csvCell, csvHeader, jsonLine, type ExportRow } from "./format.ts";

// Exports run in the background: the usage log (or the audit log) is read in keyset-paginated batches ordered by
// (started_at, id) (or (created_at, id)) and streamed to a file with back-pressure, so memory stays flat however
// many rows there are. One writer (writeExport) serves both kinds; a kind is only its rows and its lines.

export const BATCH = 2_000;
/** Usage rows per batch: a batch is one index range scan, so larger batches only save round trips. */
export const USAGE_BATCH = 10_000;
/** The row count shown while an export runs is written at most this often, not per batch. */
const PROGRESS_MS = 1_000;
export const MAX_ACTIVE_PER_ACCOUNT = 2;

const positive = (v: string | undefined, d: number) =>
  v && Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : d;
/** Exports an account may keep at once (MODELGATE_EXPORTS_PER_ACCOUNT, default 20); older ones expire first. */
export const maxKeptPerAccount = () => positive(process.env.MODELGATE_EXPORTS_PER_ACCOUNT, 20);
/** How long an export (its row and its file) is kept after it finished (MODELGATE_EXPORT_RETENTION_HOURS, default 24). */
export const retentionMs = () => positive(process.env.MODELGATE_EXPORT_RETENTION_HOURS, 24) * 3600_000;

type Ctx = ServiceContext & { dataDir: string };

export interface StoredFilters {
  from?: string;
  to?: string;
  apiKeyId?: string;
  model?: string;
  status?: number;
  success?: boolean;
  endUser?: string;
  tag?: string;
}

export function storeFilters(f: UsageFilter): StoredFilters {
  const out: StoredFilters = {};
  if (f.from) out.from = f.from.toISOString();
  if (f.to) out.to = f.to.toISOString();
  if (f.apiKeyId) out.apiKeyId = f.apiKeyId;
  if (f.model) out.model = f.model;
  if (f.status !== null && f.status !== undefined) out.status = f.status;
  if (f.success !== null && f.success !== undefined) out.success = f.success;
  if (f.endUser) out.endUser = f.endUser;
  if (f.tag) out.tag = f.tag;
  return out;
}

export const loadFilters = (s: StoredFilters): UsageFilter => ({
  from: s.from ? new Date(s.from) : null,
  to: s.to ? new Date(s.to) : null,
  apiKeyId: s.apiKeyId ?? null,
  model: s.model ?? null,
  status: s.status ?? null,
  success: s.success ?? null,
  endUser: s.endUser ?? null,
  tag: s.tag ?? null,
});

export const exportDir = (dataDir: string) => join(dataDir, "exports");

const running = new Set<Promise<void>>();
/** Resolves when every export started by this process has finished (tests and graceful shutdown). */
export const exportsIdle = async () => {
  while (running.size) await Promise.allSettled([...running]);
};

/**
 * The caps every export shares, checked before one is stored: at most MAX_ACTIVE_PER_ACCOUNT running at once and
 * maxKeptPerAccount() kept (after pruning what expired) for the account, or for the operators' exports across
 * accounts (accountId null).
 */
async function admitExport(ctx: Ctx, accountId: string | null, whoKeeps: string) {
  const active = await ctx.prisma.export.count({ where: { accountId, status: { in: ["pending", "running"] } } });
  if (active >= MAX_ACTIVE_PER_ACCOUNT) {
    throw new AppError("TOO_MANY_REQUESTS", "wait for the running exports to finish before starting another");
  }
  await pruneExports(ctx);
  const kept = await ctx.prisma.export.count({ where: { accountId } });
  if (kept >= maxKeptPerAccount()) {
    throw new AppError(
      "LIMIT_EXCEEDED",
      `${whoKeeps} ${kept} exports, the most allowed (${maxKeptPerAccount()}); each is deleted ${Math.round(retentionMs() / 3600_000)} h after it finished`,
    );
  }
}

export async function startExport(
  ctx: Ctx,
  input: { accountId: string; userId: string; format: ExportFormat; filter: UsageFilter },
) {
  usageWhere(input.accountId, input.filter); // validates the filter before anything is stored
  await admitExport(ctx, input.accountId, "this account keeps");
  const filters = storeFilters(input.filter);
  const row = await ctx.prisma.$transaction(async (tx) => {
    const created = await tx.export.create({
      data: {
        accountId: input.accountId,
        userId: input.userId,
        format: input.format,
        filters: filters as Prisma.InputJsonValue,
      },
    });
    await auditStart(tx, ctx, created.id, input.accountId, "usage", input.format, filters);
    return created;
  });
  schedule(ctx, row.id);
  return row;
}

/**
 * Starts a background export of the audit log (the same jobs, limits, retention and download as the usage
 * log's). accountId null: an operator's export across every account.
 */
export async function startAuditExport(
  ctx: Ctx,
  input: { accountId: string | null; userId: string; format: ExportFormat; filter: AuditFilter },
) {
  const filter = { ...input.filter, accountId: input.accountId ?? input.filter.accountId ?? null };
  auditWhere(filter); // validates the filter before anything is stored
  await admitExport(ctx, input.accountId, input.accountId ? "this account keeps" : "operators keep");
  const filters = storeAuditFilter(filter);
  const row = await ctx.prisma.$transaction(async (tx) => {
    const created = await tx.export.create({
      data: {
        accountId: input.accountId,
        userId: input.userId,
        kind: "audit",
        format: input.format,
        filters: filters as Prisma.InputJsonValue,
      },
    });
    await auditStart(tx, ctx, created.id, input.accountId, "audit", input.format, filters);
    return created;
  });
  schedule(ctx, row.id);
  return row;
}

/**
 * An export takes a copy of data out of the gateway: who started it, from where, of what (kind, format and
 * filters), recorded with the export's row.
 */
function auditStart(
  tx: AuditDb,
  ctx: Ctx,
  id: string,
  accountId: string | null,
  kind: "usage" | "audit",
  format: ExportFormat,
  filters: unknown,
) {
  return audit(tx, ctx.actor, {
    action: "export.start",
    subjectType: "export",
    subjectId: id,
    accountId,
    after: { kind, format, filters },
  });
}

function schedule(ctx: Ctx, id: string) {
  const job = runExport(ctx, id)
    .catch(async (err: unknown) => {
      await ctx.prisma.export
        .update({
          where: { id },
          data: {
            status: "failed",
            error: err instanceof Error ? err.message.slice(0, 500) : "export failed",
            finishedAt: new Date(),
          },
        })
        .catch(() => undefined);
    })
    .finally(() => running.delete(job));
  running.add(job);
}

/**
 * Deletes exports (row and file) that finished more than the retention ago. Runs at start-up, before each new
 * export and every hour (startExportRetention), so the data directory does not fill with old usage data.
 */
export async function pruneExports(ctx: Ctx, now = Date.now()): Promise<number> {
  const old = await ctx.prisma.export.findMany({
    where: {
      status: { in: ["ready", "failed"] },
      OR: [
        { finishedAt: { lt: new Date(now - retentionMs()) } },
        { finishedAt: null, createdAt: { lt: new Date(now - retentionMs()) } },
      ],
    },
    select: { id: true, format: true },
    take: 1_000,
  });
  for (const e of old) {
    await rm(join(exportDir(ctx.dataDir), `${e.id}.${e.format}`), { force: true });
    await rm(join(exportDir(ctx.dataDir), `${e.id}.${e.format}.part`), { force: true });
  }
  if (old.length) await ctx.prisma.export.deleteMany({ where: { id: { in: old.map((e) => e.id) } } });
  return old.length;
}

/** Hourly retention; the timer does not keep the process alive. */
export function startExportRetention(ctx: Ctx, onError: (err: unknown) => void): () => void {
  const timer = setInterval(() => void pruneExports(ctx).catch(onError), 3600_000);
  timer.unref();
  void pruneExports(ctx).catch(onError);
  return () => clearInterval(timer);
}

/** Picks up exports left pending or running by a previous process (call once at start-up). */
export async function resumeExports(ctx: Ctx) {
  const stale = await ctx.prisma.export.findMany({
    where: { status: { in: ["pending", "running"] } },
    select: { id: true },
  });
  for (const e of stale) schedule(ctx, e.id);
  return stale.length;
}

const write = (out: WriteStream, chunk: string) =>
  new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    out.once("error", onError);
    if (out.write(chunk)) {
      out.off("error", onError);
      resolve();
    } else {
      out.once("drain", () => {
        out.off("error", onError);
        resolve();
      });
    }
  });

export async function runExport(ctx: Ctx, id: string) {
  const claimed = await ctx.prisma.export.updateMany({
    where: { id, status: { in: ["pending", "running"] } },
    data: { status: "running", rowCount: 0 },
  });
  if (claimed.count !== 1) return;
  const job = await ctx.prisma.export.findUniqueOrThrow({ where: { id } });
  if (job.kind === "audit") await writeExport(ctx, job, auditSource(ctx, job));
  else await writeUsageExport(ctx, job);
}

type ExportJob = Awaited<ReturnType<Ctx["prisma"]["export"]["findUniqueOrThrow"]>>;
/** Where a batch resumes: the last row written, by the (time, id) order both logs are read in. */
type Cursor = { at: Date; id: string };

/** What tells a usage export from an audit export: its rows (in (time, id) order) and how a row is written. */
interface ExportSource<Row> {
  /** the CSV header line, written before the first row */
  csvHeader: string;
  /** rows per batch (BATCH when not said) */
  batchSize?: number;
  /** up to batchSize rows after the cursor (from the start when null) */
  batch(after: Cursor | null): Promise<Row[]>;
  cursorOf(row: Row): Cursor;
  line(row: Row): string;
  /** how many log rows one Row stands for (1 when not said; a usage CSV batch comes as one chunk of lines) */
  rowsIn?(row: Row): number;
}

/** The rows of `base` after the cursor in (timeField, id) order: keyset pagination, no OFFSET. */
function after<Where>(base: Where, timeField: string, cursor: Cursor | null): Where {
  if (!cursor) return base;
  // Prisma's where types are per model; the shape is the same for both logs, so it is built once and cast.
  return {
    AND: [base, { OR: [{ [timeField]: { gt: cursor.at } }, { [timeField]: cursor.at, id: { gt: cursor.id } }] }],
  } as Where;
}

/** What a usage export reads: the exported columns only, prices as decimal text (no object per cell). */
const EXPORT_COLUMNS = Prisma.sql`id::text AS id, started_at AS "startedAt", request_id AS "requestId",
  api_key_id::text AS "apiKeyId", model, protocol, status, error_code AS "errorCode",
  prompt_tokens AS "promptTokens", completion_tokens AS "completionTokens", reasoning_tokens AS "reasoningTokens",
  cached_tokens AS "cachedTokens", input_tokens AS "inputTokens", cache_write_5m_tokens AS "cacheWrite5mTokens",
  cache_write_1h_tokens AS "cacheWrite1hTokens", cost_micro AS "costMicro", input_price::text AS "inputPrice",
  cached_input_price::text AS "cachedInputPrice", cache_write_5m_price::text AS "cacheWrite5mPrice",
  cache_write_1h_price::text AS "cacheWrite1hPrice", output_price::text AS "outputPrice", estimated,
  end_user AS "endUser", tags, dropped, latency_ms AS "latencyMs", ttft_ms AS "ttftMs", stream`;

/**
 * Writes the account's usage log, filtered as stored with the job; each row carries its key's name. Read in SQL with a
 * row-comparison cursor, "(started_at, id) > (…)", a bound of the (account, started_at, id) index: each batch is
 * one range scan of the rows it returns, in order, however deep into the export it is.
 */
async function writeUsageExport(ctx: Ctx, job: ExportJob) {
  if (!job.accountId) throw new Error("a usage export needs an account");
  const accountId = job.accountId;
  const keyNames = new Map(
    (await ctx.prisma.apiKey.findMany({ where: { accountId }, select: { id: true, name: true } })).map((k) => [
      k.id,
      k.name,
    ]),
  );
  const base = usageConditions(accountId, loadFilters(job.filters as StoredFilters));
  if (job.format === "csv") return writeExport(ctx, job, usageCsvSource(ctx, base, keyNames));
  const line = jsonLine;
  type Row = ExportRow & { id: string };
  return writeExport(ctx, job, {
    csvHeader: csvHeader(),
    batchSize: USAGE_BATCH,
    batch: (cursor) => {
      const where = cursor
        ? [
            ...base,
            Prisma.sql`(started_at, id) > (${cursor.at}::timestamptz, ${cursor.id}::uuid)`,
            // the plain bound lets the planner leave out the partitions already read
            Prisma.sql`started_at >= ${cursor.at}`,
          ]
        : base;
      return ctx.prisma.$queryRaw<Row[]>`
        SELECT ${EXPORT_COLUMNS} FROM usage_logs WHERE ${Prisma.join(where, " AND ")}
        ORDER BY started_at, id LIMIT ${USAGE_BATCH}`;
    },
    cursorOf: (r) => ({ at: r.startedAt, id: r.id }),
    line: (r) => line(r, r.apiKeyId ? (keyNames.get(r.apiKeyId) ?? null) : null),
  } satisfies ExportSource<Row>);
}

/**
 * A CSV line's cells that are ours (numbers, money, booleans), formatted by Postgres as csvLine formats them
 * (money as units without trailing zeros, defused like any text when negative; true/false; empty for null):
 * tokens to estimated in one cell group, latency to stream in another. Client text (request id, model, end user,
 * tags, dropped, the key's name) still goes through csvCell here. An export's rows then cost one short text
 * value each instead of some thirty typed ones, and no per-row number or date conversion.
 */
const CSV_COLUMNS = Prisma.sql`id::text AS id,
  to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ts,
  request_id AS "requestId", api_key_id::text AS "apiKeyId", model, protocol, status, error_code AS "errorCode",
  concat_ws(',', prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, input_tokens,
    cache_write_5m_tokens, cache_write_1h_tokens, prompt_tokens::bigint + completion_tokens,
    CASE WHEN cost_micro < 0 THEN '''' ELSE '' END || trim_scale(cost_micro::numeric / 1000000)::text,
    COALESCE(CASE WHEN input_price < 0 THEN '''' ELSE '' END || trim_scale(input_price / 1000000)::text, ''),
    COALESCE(CASE WHEN cached_input_price < 0 THEN '''' ELSE '' END || trim_scale(cached_input_price / 1000000)::text, ''),
    COALESCE(CASE WHEN cache_write_5m_price < 0 THEN '''' ELSE '' END || trim_scale(cache_write_5m_price / 1000000)::text, ''),
    COALESCE(CASE WHEN cache_write_1h_price < 0 THEN '''' ELSE '' END || trim_scale(cache_write_1h_price / 1000000)::text, ''),
    COALESCE(CASE WHEN output_price < 0 THEN '''' ELSE '' END || trim_scale(output_price / 1000000)::text, ''),
    CASE WHEN estimated THEN 'true' ELSE 'false' END) AS mid,
  end_user AS "endUser", COALESCE(array_to_json(tags)::text, '[]') AS tags,
  COALESCE(array_to_json(dropped)::text, '[]') AS dropped,
  concat_ws(',', latency_ms, COALESCE(ttft_ms::text, ''), CASE WHEN stream THEN 'true' ELSE 'false' END) AS tail`;

// Client text that csvCell writes unchanged: empty, or starting with a letter, digit or one of _ . : / and
// holding none of the characters that make a cell quoted or defused after its first (no separator, quote, line
// break; a trigger such as - = + @ only where no separator precedes it). Most rows' text is such; a row whose
// text is all such is written by Postgres whole, any other row in the control plane.
const CLEAN = "^([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?$";
const CLEAN_LIST = `^([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?(${String.fromCharCode(31)}([A-Za-z0-9_.:/][A-Za-z0-9_.:/=+@ -]*)?)*$`;
const cleanList = (col: Prisma.Sql) =>
  Prisma.sql`(${col} IS NULL OR cardinality(${col}) = 0 OR (array_position(${col}, NULL) IS NULL AND array_to_string(${col}, chr(31)) ~ ${CLEAN_LIST}))`;
// a clean list's cell: its JSON text, quoted as csvCell quotes it ('[]' for none, as the row reader has it)
const listCell = (col: Prisma.Sql) =>
  Prisma.sql`CASE WHEN ${col} IS NULL OR cardinality(${col}) = 0 THEN '[]' ELSE '"[""' || array_to_string(${col}, '"",""') || '""]"' END`;

/**
 * A batch of the usage CSV as one chunk: its lines joined by Postgres, a clean row's as the line itself, any other
 * row's as \u0001 and its cells as JSON (DirtyRow), formatted here. Neither holds a line break (clean text has none;
 * JSON escapes them), so the chunk splits back into rows on CRLF.
 */
type CsvChunk = { text: string | null; n: number; lastId: string | null; lastTs: string | null };
type DirtyRow = [
  ts: string,
  requestId: string,
  apiKeyId: string | null,
  model: string,
  protocol: string,
  status: number,
  errorCode: string | null,
  mid: string,
  endUser: string | null,
  tags: string,
  dropped: string,
  tail: string,
];

/** The usage log as CSV lines (the same as csvLine's), read with CSV_COLUMNS. */
function usageCsvSource(ctx: Ctx, base: Prisma.Sql[], keyNames: Map<string, string>) {
  // cells that repeat (model, protocol, error, key name) are formatted once
  const memo = new Map<string, string>();
  const cell = (v: string | null) => {
    if (v === null) return "";
    let c = memo.get(v);
    if (c === undefined) {
      c = csvCell(v);
      if (memo.size < 10_000) memo.set(v, c);
    }
    return c;
  };
  const text = (v: string | null) => (v === null ? "" : csvCell(v));
  // the key names' cells, formatted here (csvCell), joined to the rows by key id
  const keyIds = [...keyNames.keys()];
  const keyCells = keyIds.map((id) => csvCell(keyNames.get(id)!));
  return {
    csvHeader: csvHeader(),
    batchSize: USAGE_BATCH,
    batch: (cursor) => {
      const where = cursor
        ? [
            ...base,
            Prisma.sql`(started_at, id) > (${cursor.at}::timestamptz, ${cursor.id}::uuid)`,
            // the plain bound lets the planner leave out the partitions already read
            Prisma.sql`started_at >= ${cursor.at}`,
          ]
        : base;
      return ctx.prisma.$queryRaw<CsvChunk[]>`
        SELECT string_agg(CASE WHEN s.clean THEN s.ts || ',' || s."requestId" || ',' || COALESCE(s."apiKeyId", '') || ',' ||
            COALESCE(kn.cell, '') || ',' || s.model || ',' || s.protocol || ',' || s.status || ',' ||
            COALESCE(s."errorCode", '') || ',' || s.mid || ',' || COALESCE(s."endUser", '') || ',' || s."tagsCell" ||
            ',' || s."droppedCell" || ',' || s.tail
          ELSE chr(1) || json_build_array(s.ts, s."requestId", s."apiKeyId", s.model, s.protocol, s.status,
            s."errorCode", s.mid, s."endUser", s.tags, s.dropped, s.tail)::text END,
          chr(13) || chr(10) ORDER BY s.started_at, s.id) AS text,
          count(*)::int AS n, (array_agg(s.id ORDER BY s.started_at DESC, s.id DESC))[1] AS "lastId", max(s.ts) AS "lastTs"
        FROM (
          SELECT ${CSV_COLUMNS}, started_at, ${listCell(Prisma.sql`tags`)} AS "tagsCell",
            ${listCell(Prisma.sql`dropped`)} AS "droppedCell",
            (request_id ~ ${CLEAN} AND model ~ ${CLEAN} AND protocol ~ ${CLEAN}
             AND (error_code IS NULL OR error_code ~ ${CLEAN}) AND (end_user IS NULL OR end_user ~ ${CLEAN})
             AND ${cleanList(Prisma.sql`tags`)} AND ${cleanList(Prisma.sql`dropped`)}) AS clean
          FROM usage_logs WHERE ${Prisma.join(where, " AND ")}
          ORDER BY started_at, id LIMIT ${USAGE_BATCH}
        ) AS s
        LEFT JOIN unnest(${keyIds}::uuid[], ${keyCells}::text[]) AS kn(id, cell) ON kn.id = s."apiKeyId"::uuid`;
    },
    cursorOf: (c) => ({ at: new Date(c.lastTs!), id: c.lastId! }),
    rowsIn: (c) => c.n,
    line: (c) => {
      if (c.text === null) return "";
      // most chunks hold clean rows only: written as they came
      if (c.text.indexOf("\u0001") === -1) return `${c.text}\r\n`;
      let out = "";
      for (const line of c.text.split("\r\n")) {
        if (line.charCodeAt(0) !== 1) {
          out += `${line}\r\n`;
          continue;
        }
        const [ts, requestId, apiKeyId, model, protocol, status, errorCode, mid, endUser, tags, dropped, tail] =
          JSON.parse(line.slice(1)) as DirtyRow;
        out += `${ts},${text(requestId)},${apiKeyId ?? ""},${apiKeyId ? cell(keyNames.get(apiKeyId) ?? null) : ""},${cell(model)},${cell(protocol)},${status},${cell(errorCode)},${mid},${text(endUser)},${text(tags)},${text(dropped)},${tail}\r\n`;
      }
      return out;
    },
  } satisfies ExportSource<CsvChunk>;
}

/** The audit log in (created_at, id) order; before/after as JSON text (in CSV, JSON inside the cell). */
function auditSource(ctx: Ctx, job: ExportJob) {
  const base = auditWhere(loadAuditFilter(job.filters as StoredAuditFilter));
  // read as whoever asked for it: a customer's export shows operators as "operator" (maskOperatorActors)
  const forOperator = job.userId
    ? ctx.prisma.user
        .findUnique({ where: { id: job.userId }, select: { role: true } })
        .then((u) => u?.role === "operator")
    : Promise.resolve(false);
  return {
    csvHeader: `${AUDIT_COLUMNS.join(",")}\r\n`,
    batch: async (cursor) => {
      const rows = await ctx.prisma.auditLog.findMany({
        where: after(base, "createdAt", cursor),
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
        take: BATCH,
      });
      return (await forOperator) ? rows : maskOperatorActors(ctx.prisma, rows);
    },
    cursorOf: (r) => ({ at: r.createdAt, id: r.id }),
    line: (r) => {
      const rec = auditRecord(r);
      if (job.format !== "csv") return `${JSON.stringify(rec)}\n`;
      return `${AUDIT_COLUMNS.map((c) => csvCell(c === "before" || c === "after" ? (rec[c] === null ? null : JSON.stringify(rec[c])) : rec[c])).join(",")}\r\n`;
    },
  } satisfies ExportSource<Awaited<ReturnType<typeof ctx.prisma.auditLog.findMany>>[number]>;
}

/**
 * Streams the source to `<id>.<format>.part` batch by batch (recording the row count after each, so the console
 * shows progress), then renames it into place and marks the job ready; on any failure the partial file goes.
 */
async function writeExport<Row>(ctx: Ctx, job: ExportJob, source: ExportSource<Row>) {
  const dir = exportDir(ctx.dataDir);
  await mkdir(dir, { recursive: true });
  const fileName = `${job.id}.${job.format}`;
  const final = join(dir, fileName);
  const partial = `${final}.part`;
  const out = createWriteStream(partial, { mode: 0o600 });
  let count = 0;
  try {
    if (job.format === "csv") await write(out, source.csvHeader);
    let cursor: Cursor | null = null;
    const size = source.batchSize ?? BATCH;
    let shown = Date.now();
    // the next batch is read while this one is formatted and written (a failure is seen when it is awaited)
    const read = (c: Cursor | null) => {
      const p = source.batch(c);
      p.catch(() => undefined);
      return p;
    };
    let next = read(cursor);
    for (;;) {
      const rows = await next;
      const n = source.rowsIn ? rows.reduce((sum, r) => sum + source.rowsIn!(r), 0) : rows.length;
      if (n === 0) break;
      cursor = source.cursorOf(rows[rows.length - 1]!);
      const more = n >= size;
      if (more) next = read(cursor);
      let text = "";
      for (const r of rows) text += source.line(r);
      await write(out, text);
      count += n;
      if (Date.now() - shown >= PROGRESS_MS) {
        shown = Date.now();
        await ctx.prisma.export.update({ where: { id: job.id }, data: { rowCount: count } });
      }
      if (!more) break;
    }
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    await rename(partial, final);
  } catch (err) {
    out.destroy();
    await rm(partial, { force: true });
    throw err;
  }
  await ctx.prisma.export.update({
    where: { id: job.id },
    data: { status: "ready", rowCount: count, filePath: fileName, finishedAt: new Date() },
  });
}
