import { mkdir, open, readdir, readFile, rm, stat, writeFile, rename, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { usageEventSchema, type UsageEvent } from "../contract/usage.ts";

// A local disk spool for usage events while Redis is unreachable, so no call goes unbilled.
//
// Layout: <dir>/<seq>.jsonl segments, one JSON event per line, appended to the newest segment only;
// <seq>.ack holds how many bytes of that segment the sink has acknowledged. Nothing is rewritten in place:
// replay seals the segment being written (new appends go to a fresh one), sends sealed segments oldest first
// in batches, records the acknowledged offset after each batch and deletes a segment once all of it is
// acknowledged. A crash at any point re-sends at most the batch in flight, which the control plane
// deduplicates by requestId. A torn last line (a crash mid-write) has no newline and is skipped.

export interface SpoolOptions {
  /** appended events reach the disk (write + fdatasync) within this; default 100 ms */
  syncIntervalMs?: number;
  /** ...or as soon as this many are waiting; default 256 */
  syncBatch?: number;
  /** start a new segment beyond this size; default 16 MiB */
  maxSegmentBytes?: number;
  /** a line that is not a valid event (skipped, never sent) */
  onCorrupt?: (segment: string, line: string) => void;
  onError?: (err: unknown) => void;
  /**
   * A replay's send failed (the sink's store is away; the events stay on disk for the next replay). Default:
   * onError. Separate because it is an outage's symptom, repeated every replay while it lasts, not a fault of
   * the spool: the data plane counts it in its outage summary instead of logging each one.
   */
  onSendError?: (err: unknown) => void;
}

export interface ReplayResult {
  sent: number;
  /** false when the sink failed; the rest stays spooled for the next replay */
  complete: boolean;
}

const SEGMENT = /^(\d+)\.jsonl$/;
// A failed write is reported through onError by the chain; the background callers need not hear it twice.
const ignore = () => {};
const NEWLINE = 10;

export class UsageSpool {
  private readonly syncIntervalMs: number;
  private readonly syncBatch: number;
  private readonly maxSegmentBytes: number;
  private readonly onCorrupt: (segment: string, line: string) => void;
  private readonly onError: (err: unknown) => void;
  private readonly onSendError: (err: unknown) => void;

  private seq: number;
  private file: FileHandle | null = null;
  private fileBytes = 0;
  /** written to the file but not fdatasync'ed yet */
  private unsynced = false;
  private buffer: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  // Writes, syncs, seals and replays are chained so they never interleave on the file.
  private chain: Promise<void> = Promise.resolve();
  private replaying: Promise<ReplayResult> | null = null;

  private constructor(
    private readonly dir: string,
    lastSeq: number,
    options: SpoolOptions,
  ) {
    this.seq = lastSeq + 1;
    this.syncIntervalMs = options.syncIntervalMs ?? 100;
    this.syncBatch = options.syncBatch ?? 256;
    this.maxSegmentBytes = options.maxSegmentBytes ?? 16 * 1024 * 1024;
    this.onCorrupt = options.onCorrupt ?? (() => {});
    this.onError = options.onError ?? (() => {});
    this.onSendError = options.onSendError ?? this.onError;
  }

  /** Opens (creating) the spool directory; segments left by an earlier process are kept for replay. */
  static async open(dir: string, options: SpoolOptions = {}): Promise<UsageSpool> {
    await mkdir(dir, { recursive: true });
    const seqs = await segmentSeqs(dir);
    return new UsageSpool(dir, seqs.length === 0 ? 0 : seqs[seqs.length - 1]!, options);
  }

  /** Queues an event for the disk; never throws. flush() waits until it is durable. */
  append(event: UsageEvent): void {
    this.buffer.push(JSON.stringify(event) + "\n");
    if (this.buffer.length >= this.syncBatch) {
      this.flush().catch(ignore);
    } else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush().catch(ignore), this.syncIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * Writes the events to the file now (one write for all the events appended in the meantime: a group
   * commit), resolving once the write is done: from then on they survive the process being killed. The
   * fdatasync that makes them survive a machine crash follows within syncIntervalMs. Never rejects (a
   * failed write goes to onError).
   */
  appendNow(events: UsageEvent[]): Promise<void> {
    for (const e of events) this.buffer.push(JSON.stringify(e) + "\n");
    if (this.timer === null) {
      this.timer = setTimeout(() => this.flush().catch(ignore), this.syncIntervalMs);
      this.timer.unref();
    }
    return this.enqueue(() => this.writeBuffered(false)).catch(ignore);
  }

  /** Resolves once everything appended so far is written and fdatasync'ed. */
  flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    return this.enqueue(() => this.writeBuffered());
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.chain.then(step);
    this.chain = next.catch((err) => this.onError(err));
    return next;
  }

  private async writeBuffered(sync = true): Promise<void> {
    if (this.buffer.length > 0) {
      const data = this.buffer.join("");
      this.buffer = [];
      if (this.file !== null && this.fileBytes >= this.maxSegmentBytes) await this.seal();
      if (this.file === null) {
        this.file = await open(join(this.dir, `${this.seq}.jsonl`), "a");
        this.fileBytes = (await this.file.stat()).size;
      }
      await this.file.write(data);
      this.unsynced = true;
      this.fileBytes += Buffer.byteLength(data);
    }
    if (sync && this.unsynced && this.file !== null) {
      await this.file.datasync();
      this.unsynced = false;
    }
  }

  // Closes the current segment so replay can own it; the next write opens a new one.
  private async seal(): Promise<void> {
    if (this.file === null) return;
    if (this.unsynced) await this.file.datasync();
    this.unsynced = false;
    await this.file.close();
    this.file = null;
    this.fileBytes = 0;
    this.seq++;
  }

  /**
   * Re-sends spooled events in the order they were appended, in batches; a batch counts as delivered when
   * send resolves. Events appended meanwhile wait for the next replay. Concurrent calls share one run.
   */
  replay(send: (batch: UsageEvent[]) => Promise<void>, batchSize = 100): Promise<ReplayResult> {
    if (this.replaying === null) {
      this.replaying = this.runReplay(send, batchSize).finally(() => {
        this.replaying = null;
      });
    }
    return this.replaying;
  }

  private async runReplay(send: (batch: UsageEvent[]) => Promise<void>, batchSize: number): Promise<ReplayResult> {
    // Make what was appended durable and seal it, so the segments replayed below are immutable.
    await this.enqueue(async () => {
      await this.writeBuffered();
      await this.seal();
    });
    const current = this.seq;
    let sent = 0;
    for (const seq of await segmentSeqs(this.dir)) {
      if (seq >= current) break;
      const r = await this.replaySegment(seq, send, batchSize);
      sent += r.sent;
      if (!r.complete) return { sent, complete: false };
    }
    return { sent, complete: true };
  }

  private async replaySegment(
    seq: number,
    send: (batch: UsageEvent[]) => Promise<void>,
    batchSize: number,
  ): Promise<ReplayResult> {
    const path = join(this.dir, `${seq}.jsonl`);
    const ackPath = join(this.dir, `${seq}.ack`);
    const data = await readFile(path);
    let offset = await readAck(ackPath);
    let sent = 0;
    let batch: UsageEvent[] = [];
    let batchEnd = offset;
    for (let start = offset; start < data.length;) {
      const end = data.indexOf(NEWLINE, start);
      if (end === -1) break; // torn last line
      const line = data.toString("utf8", start, end);
      start = end + 1;
      batchEnd = start;
      const event = parseEvent(line);
      if (event === null) this.onCorrupt(`${seq}.jsonl`, line);
      else batch.push(event);
      if (batch.length >= batchSize) {
        if (!(await this.deliver(send, batch))) return { sent, complete: false };
        sent += batch.length;
        batch = [];
        offset = batchEnd;
        await writeAck(ackPath, offset);
      }
    }
    if (batch.length > 0) {
      if (!(await this.deliver(send, batch))) return { sent, complete: false };
      sent += batch.length;
    }
    // All delivered: the segment (with any torn tail) and its cursor go.
    await rm(path, { force: true });
    await rm(ackPath, { force: true });
    return { sent, complete: true };
  }

  private async deliver(send: (batch: UsageEvent[]) => Promise<void>, batch: UsageEvent[]): Promise<boolean> {
    try {
      await send(batch);
      return true;
    } catch (err) {
      this.onSendError(err);
      return false;
    }
  }

  /**
   * Bytes waiting on disk (sealed and current segments, less their acknowledged parts), for /readyz and metrics.
   * A running replay may delete a segment between the listing and its stat: that segment is simply gone (it was
   * reported as a failed usage write once, which reopened the Redis outage 1.8 s after Redis was back).
   */
  async backlogBytes(): Promise<number> {
    let total = 0;
    for (const seq of await segmentSeqs(this.dir)) {
      let size: number;
      try {
        size = (await stat(join(this.dir, `${seq}.jsonl`))).size;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw err;
      }
      total += Math.max(0, size - (await readAck(join(this.dir, `${seq}.ack`))));
    }
    return total;
  }

  /** Flushes and closes the file; spooled events stay for the next process. */
  async close(): Promise<void> {
    await this.flush();
    await this.enqueue(() => this.seal());
  }
}

async function segmentSeqs(dir: string): Promise<number[]> {
  const seqs: number[] = [];
  for (const name of await readdir(dir)) {
    const m = SEGMENT.exec(name);
    if (m !== null) seqs.push(Number(m[1]));
  }
  return seqs.sort((a, b) => a - b);
}

function parseEvent(line: string): UsageEvent | null {
  try {
    const r = usageEventSchema.safeParse(JSON.parse(line));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

async function readAck(path: string): Promise<number> {
  try {
    const n = Number((await readFile(path, "utf8")).trim());
    return Number.isSafeInteger(n) && n >= 0 ? n : 0;
  } catch {
    return 0;
  }
}

// Written to a temporary file, synced and renamed, so a crash leaves either the old or the new offset.
async function writeAck(path: string, offset: number): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, String(offset));
  const fh = await open(tmp, "r+");
  try {
    await fh.datasync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}
