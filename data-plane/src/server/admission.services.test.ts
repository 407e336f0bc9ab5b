import { redisLimiterFixture } from "../redis/test-fixture.ts";
import { topUpCases } from "./topup-cases.ts";

topUpCases("redis", async () => redisLimiterFixture());
