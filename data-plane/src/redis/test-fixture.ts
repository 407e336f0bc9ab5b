import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { RedisRateLimiter } from "../ratelimit/redis.ts";

// Test fixtures for the suites that run against a real Redis (*.services.test.ts): each test's keys live under a
// prefix of their own and are dropped afterwards.

export const TEST_REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** Deletes every key under `prefix`. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
}

/** A Redis rate limiter on its own connection and prefix, and what undoes it. */
export function redisLimiterFixture(): { limiter: RedisRateLimiter; cleanup: () => Promise<void> } {
  const redis = new Redis(TEST_REDIS_URL);
  const prefix = `mgtest:rl:${randomUUID()}:`;
  const limiter = new RedisRateLimiter(redis, { prefix });
  return {
    limiter,
    cleanup: async () => {
      await limiter.close();
      await dropPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}
