import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { redisNames, signedEntryFields, type UsageEvent, usageEntryKey, usageShards } from "@modelgate/data-plane";
import { eventually } from "../../../test/helpers/processes.ts";
import { type RefusedEntry, RedisUsageConsumer, USAGE_GROUP } from "./redis-consumer.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const key = usageEntryKey(randomBytes(32));
const signed = (json: string) => signedEntryFields(key, json);
const ignoreRefused = { key, onRefused: () => undefined };

const event = (n: number): UsageEvent => ({
  requestId: `req_${n}_${randomUUID()}`,
  keyId: randomUUID(),
  accountId: randomUUID(),
  model: "m",
  protocol: "openai",
  upstream: "u",
  stream: false,
  promptTokens: 1,
  completionTokens: 2,
  reasoningTokens: 0,
  cachedTokens: 0,
  cost: "3",
  status: 200,
  errorCode: null,
  latencyMs: 4,
  ttftMs: 1,
  clientIp: null,
  startedAt: new Date().toISOString(),
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
  prices: null,
  estimated: false,
  endUser: null,
  tags: [],
});

describe("RedisUsageConsumer", () => {
  const redis = new Redis(REDIS_URL);
  const names = redisNames(`mgtest:consumer:${randomUUID()}:`);
  /** streams of their own, for the tests that read entries again */
  const again = [`${names.prefix}again:own`, `${names.prefix}again:claimed`];
  afterAll(async () => {
    await redis.del(...usageShards(names.prefix, 4), ...again);
    redis.disconnect();
  });

  /** A settle callback that records what each call got; `failFirst`: the first call throws. */
  function recordingSettle(failFirst: boolean) {
    const calls: { requestId: string; maybeSettled: boolean | undefined }[][] = [];
    const waiters: { count: number; resolve: () => void }[] = [];
    const settle = async (events: UsageEvent[]) => {
      // a copy: the consumer's marking must be there when settle is called, not added afterwards
      calls.push(events.map((e) => ({ requestId: e.requestId, maybeSettled: e.maybeSettled })));
      for (const w of waiters) if (calls.length >= w.count) w.resolve();
      if (failFirst && calls.length === 1) throw new Error("settlement failed");
    };
    /** resolves once settle has been called `count` times */
    const called = (count: number) =>
      new Promise<void>((resolve) => (calls.length >= count ? resolve() : waiters.push({ count, resolve })));
    return { calls, settle, called };
  }

  it("settles signed entries in bounded batches, refuses unsigned ones, then acknowledges and deletes them all", async () => {
    const turn1 = [event(1), event(2), event(3)];
    const turn2 = [event(4), event(5)];
    const single = event(6);
    const forged = event(7);
    await redis.xadd(names.usageStream, "*", ...signed(JSON.stringify(turn1)));
    // the older unsigned one-event form, an unsigned turn and a signature over other bytes: none settles
    const legacyId = await redis.xadd(names.usageStream, "*", "event", JSON.stringify(single));
    const unsignedId = await redis.xadd(names.usageStream, "*", "events", JSON.stringify([forged]));
    const [, , , sigOfTurn1] = signed(JSON.stringify(turn1));
    const misSignedId = await redis.xadd(names.usageStream, "*", "events", JSON.stringify([forged]), "sig", sigOfTurn1);
    await redis.xadd(names.usageStream, "*", ...signed("{not json"));
    await redis.xadd(names.usageStream, "*", ...signed(JSON.stringify([...turn2, { requestId: "" }])));
    const batches: string[][] = [];
    const errors: string[] = [];
    const refused: RefusedEntry[] = [];
    const consumer = new RedisUsageConsumer(
      redis.duplicate(),
      [names.usageStream],
      "c1",
      async (events) => void batches.push(events.map((e) => e.requestId)),
      (err) => errors.push(String(err)),
      { key, onRefused: (r) => refused.push(r) },
      30_000,
      2,
    );
    await consumer.start();
    try {
      await eventually(
        () => redis.xlen(names.usageStream),
        (n) => n === 0,
        5_000,
        20,
      );
    } finally {
      await consumer.stop();
    }
    expect(batches.every((b) => b.length <= 2)).toBe(true);
    expect(batches.flat()).toEqual([...turn1, ...turn2].map((e) => e.requestId));
    expect(refused).toEqual([
      { stream: names.usageStream, id: legacyId, reason: "unsigned", events: 1 },
      { stream: names.usageStream, id: unsignedId, reason: "unsigned", events: 1 },
      { stream: names.usageStream, id: misSignedId, reason: "bad signature", events: 1 },
    ]);
    expect(await redis.xlen(names.usageStream)).toBe(0);
    expect(errors.some((e) => e.includes("unreadable"))).toBe(true);
    expect(errors.some((e) => e.includes("malformed"))).toBe(true);
  });

  it("reads every shard and settles what each holds, an empty shard included", async () => {
    const shards = usageShards(names.prefix, 4);
    expect(new Set(shards).size).toBe(4);
    const settled: string[] = [];
    const consumer = new RedisUsageConsumer(
      redis.duplicate(),
      shards,
      "c2",
      async (events) => void settled.push(...events.map((e) => e.requestId)),
      () => undefined,
      ignoreRefused,
      30_000,
      100,
    );
    await consumer.start();
    // Written after the loops are blocked reading: shard 3 stays empty, and shards 0-2 each get an entry.
    const sent = [event(10), event(11), event(12)];
    try {
      for (let i = 0; i < 3; i++) await redis.xadd(shards[i]!, "*", ...signed(JSON.stringify([sent[i]])));
      await eventually(
        async () => settled.length,
        (n) => n === 3,
        5_000,
        20,
      );
    } finally {
      await consumer.stop();
    }
    expect(settled.sort()).toEqual(sent.map((e) => e.requestId).sort());
    for (const s of shards) expect(await redis.xlen(s)).toBe(0);
  });

  it("marks the events of its own entries read again after a failed settle maybeSettled, not those read fresh", async () => {
    const stream = again[0]!;
    const turn = [event(20), event(21)];
    await redis.xadd(stream, "*", ...signed(JSON.stringify(turn)));
    const { calls, settle, called } = recordingSettle(true);
    const errors: string[] = [];
    const consumer = new RedisUsageConsumer(
      redis.duplicate(),
      [stream],
      "c3",
      settle,
      (err) => errors.push(String(err)),
      ignoreRefused,
    );
    await consumer.start();
    try {
      await called(2); // the fresh read's settle failed; the entry, pending for c3, is read again
    } finally {
      await consumer.stop();
    }
    const ids = turn.map((e) => e.requestId);
    // the first delivery, read with ">": its events cannot have settled, so they may go in bulk
    expect(calls[0]).toEqual(ids.map((requestId) => ({ requestId, maybeSettled: undefined })));
    // the same entry again, from the consumer's own pending entries: the failed settle may have written rows
    expect(calls[1]).toEqual(ids.map((requestId) => ({ requestId, maybeSettled: true })));
    expect(calls).toHaveLength(2);
    expect(errors).toEqual(["Error: settlement failed"]);
    expect(await redis.xlen(stream)).toBe(0); // settled the second time, then acknowledged and deleted
  });

  it("marks the events of entries claimed from a consumer that stopped maybeSettled", async () => {
    const stream = again[1]!;
    await redis.xgroup("CREATE", stream, USAGE_GROUP, "0", "MKSTREAM");
    const turn = [event(30), event(31)];
    await redis.xadd(stream, "*", ...signed(JSON.stringify(turn)));
    // another consumer read the entry and stopped before it settled it: it stays pending for that consumer
    const read = (await redis.xreadgroup("GROUP", USAGE_GROUP, "gone", "COUNT", 10, "STREAMS", stream, ">")) as
      [string, [string, string[]][]][] | null;
    expect(read?.[0]?.[1]).toHaveLength(1);
    const { calls, settle, called } = recordingSettle(false);
    // claimIdleMs 0: the entry is claimed on the first read, with no wait for it to idle
    const consumer = new RedisUsageConsumer(
      redis.duplicate(),
      [stream],
      "c4",
      settle,
      () => undefined,
      ignoreRefused,
      0,
    );
    await consumer.start();
    try {
      await called(1);
    } finally {
      await consumer.stop();
    }
    expect(calls).toEqual([turn.map((e) => ({ requestId: e.requestId, maybeSettled: true }))]);
    expect(await redis.xlen(stream)).toBe(0);
  });
});
