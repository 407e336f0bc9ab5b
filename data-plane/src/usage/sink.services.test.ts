import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type UsageEvent, usageEntryEvents } from "../contract/usage.ts";
import { RedisUsageSink, streamIdLess } from "./sink.ts";
import { UsageSpool } from "./spool.ts";
import { checkUsageEntry, usageEntryKey } from "./entry-signature.ts";
import { usageSinkContract } from "./sink.suite.ts";
import { usageEvent as event } from "../../../test/helpers/usage-event.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const key = usageEntryKey(randomBytes(32));

usageSinkContract(
  "redis",
  async () => {
    const stream = `mgtest:usage-contract:${randomUUID()}`;
    // As the data plane opens it: no offline queue, so a write while disconnected fails at once (to the spool).
    const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    const reader = new Redis(REDIS_URL);
    await new Promise((r) => redis.once("ready", r)); // so the sink learns the server's run id at once
    const dir = await mkdtemp(join(tmpdir(), "mg-sink-contract-"));
    const sink = new RedisUsageSink(redis, stream, key, await UsageSpool.open(dir), () => undefined, 3_600_000, 30_000);
    return {
      sink,
      async delivered() {
        // Only what the control plane would settle counts: entries signed with the key, sent at once or
        // replayed from the spool alike.
        const entries = await reader.xrange(stream, "-", "+");
        return entries.flatMap(([, fields]) =>
          checkUsageEntry(key, fields).ok ? (usageEntryEvents(fields) as UsageEvent[]).map((e) => e.requestId) : [],
        );
      },
      async breakDestination() {
        // Closed for good before the test goes on: connect() on a client whose socket has not closed yet
        // fails with "already connecting/connected" (seen on a loaded machine).
        const ended = new Promise((r) => redis.once("end", r));
        redis.disconnect();
        await ended;
      },
      async heal() {
        await redis.connect();
        await sink.flush();
        await sink.replay(); // what the spool took while Redis was away
      },
      async cleanup() {
        await sink.close();
        await reader.del(stream);
        redis.disconnect();
        reader.disconnect();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  event,
);

describe("RedisUsageSink retention", () => {
  const stream = `mgtest:usage:${randomUUID()}`;
  let redis: Redis;
  let dir: string;
  let sink: RedisUsageSink;

  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    await redis.ping(); // ready, so the sink learns the server's run id at once
    dir = await mkdtemp(join(tmpdir(), "mg-sink-"));
    // replay and forgetting settled entries only when the test says so
    sink = new RedisUsageSink(redis, stream, key, await UsageSpool.open(dir), () => undefined, 3_600_000, 30_000);
  });
  afterAll(async () => {
    await sink.close();
    await redis.del(stream);
    redis.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it("sends a window's events as one entry and keeps it until the control plane has settled (deleted) it", async () => {
    for (const n of [1, 2, 3]) sink.emit(event(n));
    await sink.flush();
    for (const n of [4, 5]) sink.emit(event(n));
    await sink.flush();
    const entries = await redis.xrange(stream, "-", "+");
    expect(entries.map(([, fields]) => (usageEntryEvents(fields) as UsageEvent[]).map((e) => e.requestId))).toEqual([
      ["req-1", "req-2", "req-3"],
      ["req-4", "req-5"],
    ]);
    expect(sink.retainedEntries).toBe(2);

    await sink.forgetSettled(); // nothing settled yet
    expect(sink.retainedEntries).toBe(2);
    await redis.xdel(stream, entries[0]![0]); // the control plane settled the first entry
    await sink.forgetSettled();
    expect(sink.retainedEntries).toBe(1);
    await redis.xdel(stream, entries[1]![0]);
    await sink.forgetSettled();
    expect(sink.retainedEntries).toBe(0);
  });

  it("forgets nothing on the word of a Redis that is not the server its entries went to (restarted empty)", async () => {
    const resends: number[] = [];
    const restarted = `${stream}:restarted`;
    // A sink of its own, with onResend: it ends up taking another server's run id for the stream's, which the
    // shared sink must not carry into the tests after this one.
    const own = new RedisUsageSink(
      redis,
      restarted,
      key,
      await UsageSpool.open(join(dir, "restarted")),
      () => undefined,
      3_600_000,
      30_000,
      (n) => resends.push(n),
    );
    // From here on the sink's reads answer as a server with another run id would, the stream read from Redis
    // (in the order the sink's pipeline asks: XRANGE, then INFO).
    const newServer = {
      xrange: () => newServer,
      info: () => newServer,
      exec: async () => [
        [null, await redis.xrange(restarted, "-", "+", "COUNT", 1)],
        [null, "# Server\r\nrun_id:0123456789abcdef\r\n"],
      ],
    };
    let spy: { mockRestore(): void } | undefined;
    try {
      // Redis answers in order: the sink's check of the server at its start (its run id) came before this.
      own.emit(event(7));
      await own.flush();
      expect(own.retainedEntries).toBe(1);
      // Redis restarts empty: the entry is gone, not settled, and an empty stream must not pass for "all settled".
      await redis.del(restarted);
      spy = vi.spyOn(redis, "pipeline").mockReturnValue(newServer as never);
      await own.forgetSettled();
      // The sink forgot the entry only to send its events to the new server again, marked as maybe settled.
      expect(resends).toEqual([1]);
      await own.flush(); // the resend's XADD
      const entries = await redis.xrange(restarted, "-", "+");
      expect(
        entries.map(([, fields]) => {
          expect(checkUsageEntry(key, fields).ok).toBe(true);
          return (usageEntryEvents(fields) as UsageEvent[]).map((e) => [e.requestId, e.maybeSettled]);
        }),
      ).toEqual([[["req-7", true]]]);
      // What it retains now is the resent entry, and the new server's word counts: not settled yet, kept...
      expect(own.retainedEntries).toBe(1);
      await own.forgetSettled();
      expect(own.retainedEntries).toBe(1);
      // ...until the control plane has settled (deleted) it there, and no further resend.
      await redis.xdel(restarted, entries[0]![0]);
      await own.forgetSettled();
      expect(own.retainedEntries).toBe(0);
      expect(resends).toEqual([1]);
    } finally {
      spy?.mockRestore();
      await own.close();
      await redis.del(restarted);
    }
  });

  it("keeps at most its size bound, dropping the oldest entries first", async () => {
    const small = new RedisUsageSink(
      redis,
      `${stream}:small`,
      key,
      await UsageSpool.open(join(dir, "small")),
      () => undefined,
      3_600_000,
      30_000,
      undefined,
      500,
      1_000,
    );
    try {
      for (let n = 0; n < 6; n++) {
        small.emit(event(n)); // one entry of about 350 characters each
        await small.flush();
      }
      expect(small.retainedEntries).toBe(2);
    } finally {
      await small.close();
      await redis.del(`${stream}:small`);
    }
  });

  it("orders stream ids as Redis does", () => {
    expect(streamIdLess("1700000000000-5", "1700000000000-12")).toBe(true);
    expect(streamIdLess("1700000000000-12", "1700000000000-5")).toBe(false);
    expect(streamIdLess("999999999999-99", "1700000000000-0")).toBe(true);
    expect(streamIdLess("1700000000000-0", "1700000000000-0")).toBe(false);
  });
});

describe("RedisUsageSink marks the events it sends again maybeSettled (settlement checks those for a row)", () => {
  const streams: string[] = [];
  const dirs: string[] = [];
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    await redis.ping(); // ready, so a sink learns the server's run id at once
  });
  afterAll(async () => {
    if (streams.length > 0) await redis.del(...streams);
    redis.disconnect();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  async function newSink(onResend?: (count: number) => void) {
    const stream = `mgtest:usage-resent:${randomUUID()}`;
    const dir = await mkdtemp(join(tmpdir(), "mg-sink-resent-"));
    streams.push(stream);
    dirs.push(dir);
    // no replay or forgetting by timer: only when the test says so
    const sink = new RedisUsageSink(
      redis,
      stream,
      key,
      await UsageSpool.open(dir),
      () => undefined,
      3_600_000,
      30_000,
      onResend,
    );
    return { sink, stream };
  }
  /** each entry's events in the stream, as (request id, maybeSettled) */
  const entries = async (stream: string) =>
    (await redis.xrange(stream, "-", "+")).map(([, fields]) => {
      expect(checkUsageEntry(key, fields).ok).toBe(true);
      return (usageEntryEvents(fields) as UsageEvent[]).map((e) => [e.requestId, e.maybeSettled]);
    });

  it("replayed from the spool: marked; sent at once: not", async () => {
    const { sink, stream } = await newSink();
    try {
      // The first XADD reaches Redis, but its answer is lost (a timeout after the write): the sink spools the
      // events, and its replay sends them a second time.
      const xadd = redis.xadd.bind(redis) as (...args: unknown[]) => Promise<string | null>;
      const spy = vi.spyOn(redis, "xadd").mockImplementationOnce((async (...args: unknown[]) => {
        await xadd(...args);
        throw new Error("Command timed out");
      }) as never);
      sink.emit(event(1));
      sink.emit(event(2));
      await sink.flush(); // the failed send's events are in the spool
      spy.mockRestore();
      sink.emit(event(3));
      await sink.flush();
      expect(await sink.replay()).toBe(2);
      expect(await entries(stream)).toEqual([
        [
          ["req-1", undefined],
          ["req-2", undefined],
        ],
        [["req-3", undefined]],
        [
          ["req-1", true],
          ["req-2", true],
        ],
      ]);
    } finally {
      await sink.close();
    }
  });

  it("resent to a Redis with another run id (restarted, or failed over): marked", async () => {
    const resends: number[] = [];
    const { sink, stream } = await newSink((n) => resends.push(n));
    try {
      sink.emit(event(4));
      sink.emit(event(5));
      // Redis answers in order: the sink's check of the server at its start (its run id) came before this.
      await sink.flush();
      // The next check reads another server's run id (the entry still there: the resend does not depend on
      // the stream being empty).
      const fake = {
        xrange: () => fake,
        info: () => fake,
        exec: async () => [
          [null, await redis.xrange(stream, "-", "+", "COUNT", 1)],
          [null, "# Server\r\nrun_id:0123456789abcdef\r\n"],
        ],
      };
      const spy = vi.spyOn(redis, "pipeline").mockReturnValue(fake as never);
      try {
        await sink.forgetSettled();
      } finally {
        spy.mockRestore();
      }
      expect(resends).toEqual([2]);
      await sink.flush(); // the resend's XADD
      expect(await entries(stream)).toEqual([
        [
          ["req-4", undefined],
          ["req-5", undefined],
        ],
        [
          ["req-4", true],
          ["req-5", true],
        ],
      ]);
    } finally {
      await sink.close();
    }
  });
});
