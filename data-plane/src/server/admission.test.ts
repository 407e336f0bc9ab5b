import { MemoryRateLimiter } from "../ratelimit/memory.ts";
import { topUpCases } from "./topup.suite.ts";

topUpCases("memory", async () => {
  const limiter = new MemoryRateLimiter();
  return { limiter, cleanup: () => limiter.close() };
});
