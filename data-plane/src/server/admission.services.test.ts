import { redisLimiterFixture } from "../redis/test-fixture.ts";
import { topUpCases } from "./topup.suite.ts";

topUpCases("redis", async () => redisLimiterFixture());
