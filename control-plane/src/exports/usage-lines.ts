import type { ExportFormat, Prisma } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { CopyLineReader, cursorTime, type RowCursor } from "./copy-lines.ts";
import { csvLineSql, inlineSql, jsonLineSql, literal } from "./usage-lines-sql.ts";

/** A piece of an export's file and how many rows it holds. */
export type ExportPiece = { data: string | Buffer; rows: number };

/**
 * Rows per COPY statement. Each is one range scan of the (account_id, started_at, id) index from the last row
 * written; a batch, not the whole export in one statement, so no statement holds its snapshot and its locks on
 * the log's partitions (which retention must take to drop one) for longer than about a second.
 */
export const COPY_BATCH = 100_000;
/** Rows per query where there is no COPY (PGlite, embedded mode): the lines come back as rows. */
export const QUERY_BATCH = 10_000;
/**
 * A COPY's chunks (a socket read each, often one 8 kB packet: some thirty rows) are gathered up to this size
 * before they are written: per chunk, a file write and its promises cost more than the rows' bytes.
 */
const PIECE_BYTES = 1 << 20;

/**
 * The account's usage log, filtered, as the export's lines in (started_at, id) order, batch after batch. Postgres
 * writes each line (usage-lines-sql.ts); on Postgres they come through COPY … TO STDOUT in binary framing, chunk by
 * chunk as the file takes them, so the control plane does no per-row work beyond copying the line's bytes.
 */
export async function* usageLines(
  ctx: ServiceContext,
  opts: { format: ExportFormat; keyNames: Map<string, string>; filter: Prisma.Sql[]; batchRows?: number },
): AsyncGenerator<ExportPiece> {
  const line = opts.format === "csv" ? csvLineSql(opts.keyNames) : jsonLineSql(opts.keyNames);
  const base = opts.filter.map(inlineSql);
  const size = opts.batchRows ?? (ctx.copyOut ? COPY_BATCH : QUERY_BATCH);
  let cursor: RowCursor | null = null;
  for (;;) {
    const where: string[] = cursor
      ? [
          ...base,
          `(started_at, id) > (${cursorTime(cursor.us)}, ${literal(cursor.id)}::uuid)`,
          // the plain bound lets the planner leave out the partitions already read
          `started_at >= ${cursorTime(cursor.us)}`,
        ]
      : base;
    const from: string = `FROM usage_logs WHERE ${where.join(" AND ")} ORDER BY started_at, id LIMIT ${size}`;
    let rows: number;
    if (ctx.copyOut) {
      const reader = new CopyLineReader();
      let parts: Buffer[] = [];
      let bytes = 0;
      let written = 0;
      const piece = () => {
        const p = { data: Buffer.concat(parts, bytes), rows: reader.rows - written };
        parts = [];
        bytes = 0;
        written = reader.rows;
        return p;
      };
      for await (const chunk of ctx.copyOut(
        `COPY (SELECT ${line}, started_at, id ${from}) TO STDOUT (FORMAT binary)`,
      )) {
        const data = reader.push(chunk);
        parts.push(data);
        bytes += data.length;
        if (bytes >= PIECE_BYTES) yield piece();
      }
      reader.end();
      if (bytes) yield piece();
      rows = reader.rows;
      cursor = reader.last;
    } else {
      const batch: { line: string; us: string; id: string }[] = await ctx.prisma.$queryRawUnsafe(
        `SELECT ${line} AS line, (extract(epoch FROM started_at) * 1000000)::bigint::text AS us, id::text AS id ${from}`,
      );
      rows = batch.length;
      if (rows) {
        yield { data: batch.map((r) => r.line).join(""), rows };
        const last = batch[rows - 1]!;
        cursor = { us: BigInt(last.us), id: last.id };
      }
    }
    if (rows < size) return;
  }
}
