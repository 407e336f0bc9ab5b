import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import type { RedisOptions } from "ioredis";
import { connectFrom } from "../redis/connect.ts";
import { type FromLoadWorker, loadWorkerDataSchema, type ToLoadWorker, toLoadWorkerSchema } from "./load-protocol.ts";
import { scanShards } from "./scan.ts";
import { type PolicyTable, ShardBuilders, type ShardKind } from "./table.ts";

// The policy load worker: a replica's full load (redis-feed.ts) read and built here, on a thread of its own.
//
// Why a thread: a full load passes every entity through the heap that reads it (ioredis' reply Buffers, one per
// id and per JSON, and the builders' growing arrays). On the request thread that garbage set off a burst of
// mark-compacts (6–7 in a 2 s reload at 100k keys, 5–17 ms each) that the calls served meanwhile waited for.
// A worker has a V8 heap of its own: its collections pause only this thread. What crosses to the main thread
// is each finished shard's few typed arrays, which the main thread wraps as a PolicyTable and swaps in
// (full-load.ts FullLoad.swapShard), as it would a table it had built itself. They are built in SharedArrayBuffers
// (shared, not copied): transferred ArrayBuffers count as the main thread's external memory, and a reload
// moving the whole set's bytes (~90 MB at 100k keys) across made V8 start a mark-compact on the request
// thread every time (an 11 ms pause in the reload at 100k keys; in a node experiment, 90 MB of transferred
// tables per round set off a mark-compact per round, shared ones none). A shared table's memory goes when the
// main thread's collector drops its last view, at its next collection as for any other garbage.
//
// One load at a time: a new `load` cancels the one running. The worker keeps its connection between loads
// (a reload after a gap or on a new epoch needs no new connection); the replica terminates it on stop.

const port = parentPort!;
const { connection, nice } = loadWorkerDataSchema.parse(workerData);
lowerPriority(nice);
// Commands queue until the connection is up (a fresh worker's first HSCAN would otherwise fail at once); a
// failed command rejects after one retry, as the replica's own connection does, so a load fails instead of
// waiting on a Redis that is away (the replica reports it and retries at its next pass).
const redis = connectFrom({ ...connection, options: connection.options as RedisOptions }, { enableOfflineQueue: true });
// Errors reach the load through the commands that fail; an unhandled 'error' event would end the thread.
redis.on("error", () => undefined);

let current: { id: number; cancelled: boolean } | null = null;

port.on("message", (raw: unknown) => {
  const m: ToLoadWorker = toLoadWorkerSchema.parse(raw);
  if (m.type === "cancel") {
    if (current?.id === m.id) current.cancelled = true;
    return;
  }
  if (current) current.cancelled = true;
  void run(m);
});

/** Posts a shard's tables, their buffers moved to the main thread (the worker keeps nothing of them). */
function post(id: number, kind: ShardKind, shard: number, complete: boolean, table: PolicyTable, money: PolicyTable) {
  // (typed by hand: zod's inferred type wants views over ArrayBuffer, table.ts's allow any ArrayBufferLike)
  const msg = {
    type: "shard" as const,
    id,
    kind,
    shard,
    complete,
    table: table.parts(),
    money: money.parts(),
  };
  const transfer: ArrayBuffer[] = [];
  for (const p of [msg.table, msg.money])
    // each array's own buffer (TableBuilder allocates them; a subarray of one still moves the whole buffer)
    if (p)
      for (const a of [p.blob, p.offs, p.idLens, p.vers, p.index])
        if (a.buffer instanceof ArrayBuffer) transfer.push(a.buffer); // (a SharedArrayBuffer is shared, not moved)
  port.postMessage(msg, transfer);
}

async function run(m: Extract<ToLoadWorker, { type: "load" }>): Promise<void> {
  const state = { id: m.id, cancelled: false };
  current = state;
  const like = { key: new Map<number, { count: number; bytes: number }>(), account: new Map() };
  for (const s of m.shards) like[s.kind].set(s.shard, { count: s.count, bytes: s.bytes });
  const builders = new ShardBuilders((kind, shard) => like[kind].get(shard), m.shared);
  // What was read of shards not finished: the main thread applies it as changes if it gives the load up.
  const rest = () => {
    for (const [kind, shard] of builders.open()) {
      const { table, money } = builders.take(kind, shard);
      post(m.id, kind, shard, false, table, money);
    }
  };
  try {
    const read = await scanShards(
      redis,
      m.shards,
      {
        scanCount: m.scanCount,
        parallel: m.parallel,
        pace: m.pace,
        cancelled: () => state.cancelled,
        current: async () => (await redis.hget(m.metaKey, "epoch")) === m.epoch,
      },
      (kind, id, json) => builders.putBytes(kind, id, json),
      (kind, shard) => {
        const { table, money } = builders.take(kind, shard);
        post(m.id, kind, shard, true, table, money);
      },
    );
    if (state.cancelled || read === "gone") rest();
    port.postMessage({ type: "end", id: m.id } satisfies FromLoadWorker);
  } catch (err) {
    rest();
    // The message alone: ioredis' errors name the command and the server, never the credentials.
    port.postMessage({ type: "end", id: m.id, error: (err as Error)?.message ?? String(err) } satisfies FromLoadWorker);
  } finally {
    if (current === state) current = null;
  }
}

/**
 * Gives this thread a lower CPU priority than the replica's main thread (Linux: a thread is a task of its own,
 * and setpriority on its id renices that thread alone). On two cores a reload's reading competes with the calls
 * being served, Redis and everything else; the scheduler then lets the main thread run first whenever both
 * want a core, and the load takes the idle time. Elsewhere (no /proc/thread-self) it stays as it is.
 */
function lowerPriority(n: number): void {
  if (n === 0) return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, n);
  } catch {
    // not Linux, or not allowed: the default priority
  }
}
