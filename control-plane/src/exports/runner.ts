import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { audit, type AuditDb } from "../audit/record.ts";
import type { Prisma, ExportFormat } from "../generated/prisma/client.ts";
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
import { csvCell, csvHeader } from "./format.ts";
import { usageLines, type ExportPiece } from "./usage-lines.ts";

// Exports run in the background: the usage log (or the audit log) is read in keyset-paginated batches ordered by
// (started_at, id) (or (created_at, id)) and streamed to a file with back-pressure, so memory stays flat however
// many rows there are. One writer (writeExport) serves both kinds; a kind is only the pieces of file it yields
// (usage: usage-lines.ts, where Postgres writes the lines).

/** Audit rows per batch. */
export const BATCH = 2_000;
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

const write = (out: WriteStream, chunk: string | Buffer) =>
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

export async function runExport(ctx: Ctx, id: string, opts: { batchRows?: number } = {}) {
  const claimed = await ctx.prisma.export.updateMany({
    where: { id, status: { in: ["pending", "running"] } },
    data: { status: "running", rowCount: 0 },
  });
  if (claimed.count !== 1) return;
  const job = await ctx.prisma.export.findUniqueOrThrow({ where: { id } });
  if (job.kind === "audit") {
    await writeExport(ctx, job, `${AUDIT_COLUMNS.join(",")}\r\n`, auditPieces(ctx, job));
    return;
  }
  if (!job.accountId) throw new Error("a usage export needs an account");
  const accountId = job.accountId;
  const keyNames = new Map(
    (await ctx.prisma.apiKey.findMany({ where: { accountId }, select: { id: true, name: true } })).map((k) => [
      k.id,
      k.name,
    ]),
  );
  const filter = usageConditions(accountId, loadFilters(job.filters as StoredFilters));
  await writeExport(ctx, job, csvHeader(), usageLines(ctx, { format: job.format, keyNames, filter, ...opts }));
}

type ExportJob = Awaited<ReturnType<Ctx["prisma"]["export"]["findUniqueOrThrow"]>>;

/** The audit log in (created_at, id) order, in keyset batches; before/after as JSON text (in CSV, inside the cell). */
async function* auditPieces(ctx: Ctx, job: ExportJob): AsyncGenerator<ExportPiece> {
  const base = auditWhere(loadAuditFilter(job.filters as StoredAuditFilter));
  // read as whoever asked for it: a customer's export shows operators as "operator" (maskOperatorActors)
  const forOperator = job.userId
    ? (await ctx.prisma.user.findUnique({ where: { id: job.userId }, select: { role: true } }))?.role === "operator"
    : false;
  const batch = async (cursor: { at: Date; id: string } | null) => {
    const where = cursor
      ? {
          AND: [base, { OR: [{ createdAt: { gt: cursor.at } }, { createdAt: cursor.at, id: { gt: cursor.id } }] }],
        }
      : base;
    const rows = await ctx.prisma.auditLog.findMany({
      where,
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: BATCH,
    });
    return forOperator ? rows : maskOperatorActors(ctx.prisma, rows);
  };
  const line = (r: Awaited<ReturnType<typeof batch>>[number]) => {
    const rec = auditRecord(r);
    if (job.format !== "csv") return `${JSON.stringify(rec)}\n`;
    return `${AUDIT_COLUMNS.map((c) => csvCell(c === "before" || c === "after" ? (rec[c] === null ? null : JSON.stringify(rec[c])) : rec[c])).join(",")}\r\n`;
  };
  // the next batch is read while this one is formatted and written (a failure is seen when it is awaited)
  const read = (c: { at: Date; id: string } | null) => {
    const p = batch(c);
    p.catch(() => undefined);
    return p;
  };
  let next = read(null);
  for (;;) {
    const rows = await next;
    if (rows.length === 0) return;
    const last = rows[rows.length - 1]!;
    const more = rows.length >= BATCH;
    if (more) next = read({ at: last.createdAt, id: last.id });
    let data = "";
    for (const r of rows) data += line(r);
    yield { data, rows: rows.length };
    if (!more) return;
  }
}

/**
 * Streams the pieces to `<id>.<format>.part` (the CSV header first), recording the row count at most every
 * PROGRESS_MS so the console shows progress, then renames it into place and marks the job ready; on any failure
 * the partial file goes. Each piece is written (with back-pressure) before the next is asked for, so memory holds
 * one piece at a time whatever the export's size.
 */
async function writeExport(ctx: Ctx, job: ExportJob, header: string, pieces: AsyncIterable<ExportPiece>) {
  const dir = exportDir(ctx.dataDir);
  await mkdir(dir, { recursive: true });
  const fileName = `${job.id}.${job.format}`;
  const final = join(dir, fileName);
  const partial = `${final}.part`;
  const out = createWriteStream(partial, { mode: 0o600 });
  let count = 0;
  try {
    if (job.format === "csv") await write(out, header);
    let shown = Date.now();
    for await (const piece of pieces) {
      await write(out, piece.data);
      count += piece.rows;
      if (Date.now() - shown >= PROGRESS_MS) {
        shown = Date.now();
        await ctx.prisma.export.update({ where: { id: job.id }, data: { rowCount: count } });
      }
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
