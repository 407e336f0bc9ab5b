import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { redisNames, signedEntryFields, type UsageEvent, usageEntryKey, usageShards } from "@modelgate/data-plane";
import { eventually } from "../../../test/helpers/processes.ts";
import { type RefusedEntry, RedisUsageConsumer } from "./redis-consumer.ts";

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
  afterAll(async () => {
    await redis.del(...usageShards(names.prefix, 4));
    redis.disconnect();
  });

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
});
