import type { Pool } from "pg";
import { to as copyTo } from "pg-copy-streams";

/**
 * Streams what a `COPY (…) TO STDOUT` statement writes, chunk by chunk, on a connection of its own. The stream is
 * read only as fast as the caller takes chunks (pg-copy-streams pauses the socket), so memory stays flat however
 * much Postgres writes. A caller that stops early (or fails) ends the connection instead of returning it with a
 * COPY still running.
 */
export type CopyOut = (sql: string) => AsyncIterable<Buffer>;

/**
 * At most this many COPY statements hold a connection at once (the others wait their turn): a COPY keeps its
 * connection as long as its reader takes, and the pool's other connections serve GraphQL and settlement.
 */
export const MAX_COPIES = 2;

export function copyOutFrom(pool: Pool): CopyOut {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async function* copyOut(sql: string) {
    while (running >= MAX_COPIES) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      const client = await pool.connect();
      let finished = false;
      try {
        // Without JIT: an export's COPY computes a long expression per row (its line), whose estimated cost puts
        // it past jit_above_cost; compiling and optimising it took longer than it saved (a usage CSV batch: 16 µs
        // of Postgres CPU per row with JIT, 6 without).
        await client.query("BEGIN READ ONLY");
        await client.query("SET LOCAL jit = off");
        // leaving the loop early (the caller stopped, or failed) destroys the stream; the connection then goes
        for await (const chunk of client.query(copyTo(sql))) yield chunk as Buffer;
        await client.query("COMMIT");
        finished = true;
      } finally {
        client.release(finished ? undefined : true);
      }
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
