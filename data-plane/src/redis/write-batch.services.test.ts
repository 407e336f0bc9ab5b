import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batchWritesThisTurn } from "./write-batch.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

describe("batchWritesThisTurn", () => {
  const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, commandTimeout: 1000 });
  const key = `mgtest:wb:${randomUUID()}`;
  beforeAll(async () => {
    await new Promise<void>((r) => (redis.status === "ready" ? r() : redis.once("ready", () => r())));
  });
  afterAll(async () => {
    await redis.del(key);
    redis.disconnect();
  });

  it("holds the turn's commands in one write and answers each of them", async () => {
    batchWritesThisTurn(redis);
    const replies = Array.from({ length: 20 }, () => redis.incr(key));
    batchWritesThisTurn(redis); // a second call in the same turn changes nothing
    expect(redis.stream.writableCorked).toBe(1);
    // all twenty are buffered in the socket, not yet handed to the kernel
    expect(redis.stream.writableLength).toBeGreaterThan(20 * 20);
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(redis.stream.writableCorked).toBe(0);
    expect(redis.stream.writableLength).toBe(0);
  });

  it("does nothing on a client that is not connected (the command fails fast as before)", async () => {
    const down = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on("error", () => undefined);
    batchWritesThisTurn(down);
    await expect(down.get(key)).rejects.toThrow();
    down.disconnect();
  });
});
