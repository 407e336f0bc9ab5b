// Reads a binary COPY of (line text, started_at timestamptz, id uuid) rows: the lines' bytes are what an export
// writes; the last row's time and id are where the next batch starts. Binary, not text or CSV COPY: those escape or
// quote the line (its tabs, quotes, line breaks), binary frames it with a length and leaves its bytes alone.
// Format: https://www.postgresql.org/docs/current/sql-copy.html ("Binary Format").

const SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "latin1");
const HEADER = SIGNATURE.length + 8; // flags and header extension length
const TS_FIELD = 4 + 8;
const ID_FIELD = 4 + 16;
/** µs from the Unix epoch to Postgres's (2000-01-01), where binary timestamps count from */
const PG_EPOCH_US = 946_684_800_000_000n;

/** A row's place in (started_at, id) order: the time in µs since the Unix epoch and the id. */
export type RowCursor = { us: bigint; id: string };

export class CopyLineReader {
  /** rows read so far */
  rows = 0;
  /** the last complete row's cursor (null before any) */
  last: RowCursor | null = null;
  private carry: Buffer | null = null;
  private header = false;
  private ended = false;

  /** The lines of the rows complete in what was read so far; a row cut at the chunk's end waits for the next. */
  push(chunk: Buffer): Buffer {
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    let pos = 0;
    if (!this.header) {
      if (buf.length < HEADER) return this.keep(buf, 0);
      if (!buf.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error("not a binary COPY");
      const extension = buf.readUInt32BE(SIGNATURE.length + 4);
      if (buf.length < HEADER + extension) return this.keep(buf, 0);
      pos = HEADER + extension;
      this.header = true;
    }
    const out = Buffer.allocUnsafe(buf.length);
    let written = 0;
    let lastTail = -1;
    while (pos + 2 <= buf.length) {
      const fields = buf.readInt16BE(pos);
      if (fields === -1) {
        this.ended = true;
        pos += 2;
        break;
      }
      if (fields !== 3) throw new Error(`a binary COPY row of ${fields} fields, not 3`);
      if (pos + 6 > buf.length) break;
      const length = buf.readInt32BE(pos + 2);
      if (length < 0) throw new Error("a null line in a binary COPY");
      const tail = pos + 6 + length;
      const end = tail + TS_FIELD + ID_FIELD;
      if (end > buf.length) break;
      if (buf.readInt32BE(tail) !== 8 || buf.readInt32BE(tail + TS_FIELD) !== 16)
        throw new Error("a binary COPY row's time or id is not where it should be");
      buf.copy(out, written, pos + 6, tail);
      written += length;
      lastTail = tail;
      pos = end;
      this.rows++;
    }
    if (lastTail >= 0) {
      const id = buf.toString("hex", lastTail + TS_FIELD + 4, lastTail + TS_FIELD + 4 + 16);
      this.last = {
        us: buf.readBigInt64BE(lastTail + 4) + PG_EPOCH_US,
        id: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`,
      };
    }
    this.keep(buf, pos);
    return out.subarray(0, written);
  }

  /** Checks the stream ended where a COPY ends: after its trailer, with nothing cut off. */
  end() {
    if (!this.ended || this.carry) throw new Error("a binary COPY ended before its trailer");
  }

  private keep(buf: Buffer, from: number) {
    // a copy, so the chunk it came from is not held
    if (from < buf.length) this.carry = Buffer.from(buf.subarray(from));
    return Buffer.alloc(0);
  }
}

/** A cursor's time as a timestamptz literal, to the microsecond. */
export function cursorTime(us: bigint): string {
  const ms = us / 1000n - (us % 1000n < 0n ? 1n : 0n);
  const micro = us - ms * 1000n;
  const iso = new Date(Number(ms)).toISOString();
  return `'${iso.slice(0, -1)}${micro.toString().padStart(3, "0")}Z'::timestamptz`;
}
