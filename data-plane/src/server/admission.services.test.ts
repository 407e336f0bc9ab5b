import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { RedisRateLimiter } from "../ratelimit/redis.ts";
import { topUpCases } from "./topup-cases.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

topUpCases("redis", async () => {
  const redis = new Redis(REDIS_URL);
  const prefix = `mgtest:rl:${randomUUID()}:`;
  const limiter = new RedisRateLimiter(redis, { prefix });
  return {
    limiter,
    cleanup: async () => {
      await limiter.close();
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== "0");
      redis.disconnect();
    },
  };
});
