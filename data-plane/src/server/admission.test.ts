import { MemoryRateLimiter } from "../ratelimit/memory.ts";
import { topUpCases } from "./topup-cases.ts";

topUpCases("memory", async () => {
  const limiter = new MemoryRateLimiter();
  return { limiter, cleanup: () => limiter.close() };
});
