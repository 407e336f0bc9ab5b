import { z } from "zod";

// The messages between a replica's main thread and its policy load worker (load-worker.ts, load-thread.ts).
// Both ends parse what they receive: a message of another shape (a mismatched build of the two files) fails
// the load loudly instead of swapping a malformed table in.

const kind = z.enum(["key", "account"]);

/** What the worker needs at start: how to reach Redis (credentials included: never logged). */
export const loadWorkerDataSchema = z.object({
  connection: z.object({
    url: z.string().optional(),
    nodes: z.array(z.object({ host: z.string(), port: z.number() })).optional(),
    options: z.record(z.string(), z.unknown()),
  }),
  /** the thread's nice value (0: as the main thread; higher yields the CPU to it), see load-worker.ts */
  nice: z.number().int().min(0).max(19),
});
export type LoadWorkerData = z.infer<typeof loadWorkerDataSchema>;

/** main → worker */
export const toLoadWorkerSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("load"),
    /** this load's number: every answer carries it, so answers of a load given up are told apart */
    id: z.number().int(),
    /** the shard hashes to read, in order, each with what that shard held before (to size its builder) */
    shards: z.array(z.object({ kind, shard: z.number().int(), key: z.string(), count: z.number(), bytes: z.number() })),
    /** the head and the epoch it must still name (ScanOptions.current) */
    metaKey: z.string(),
    epoch: z.string(),
    /** build the tables in SharedArrayBuffers (shared with the main thread) instead of transferring them */
    shared: z.boolean(),
    scanCount: z.number().int().positive(),
    parallel: z.number().int().positive(),
    pace: z.number().nonnegative(),
  }),
  /** stop reading (a newer epoch, or the replica stops); the worker answers with what it read and `end` */
  z.object({ type: z.literal("cancel"), id: z.number().int() }),
]);
export type ToLoadWorker = z.infer<typeof toLoadWorkerSchema>;

/** A table's arrays (table.ts TableParts); null: the empty table. Their buffers are transferred, not copied. */
const partsSchema = z
  .object({
    blob: z.instanceof(Uint8Array),
    offs: z.instanceof(Uint32Array),
    idLens: z.instanceof(Uint32Array),
    vers: z.instanceof(Float64Array),
    index: z.instanceof(Int32Array),
    count: z.number().int().nonnegative(),
  })
  .nullable();

/** worker → main */
export const fromLoadWorkerSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("shard"),
    id: z.number().int(),
    kind,
    shard: z.number().int().min(0).max(255),
    /** true: every entry of the shard was read (swap it in); false: what was read when the load stopped short */
    complete: z.boolean(),
    table: partsSchema,
    money: partsSchema,
  }),
  /** the load ended: read in full, or cancelled (no error), or Redis failed (error: its message) */
  z.object({ type: z.literal("end"), id: z.number().int(), error: z.string().optional() }),
]);
export type FromLoadWorker = z.infer<typeof fromLoadWorkerSchema>;
