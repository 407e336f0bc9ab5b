import { afterAll, beforeAll, describe } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import {
  type FallbackScenario,
  fallbackCases,
  fallbackConfig,
  startFallbackMocks,
} from "../helpers/fallback-scenario.ts";

// Fallbacks and prompt-cache affinity in distributed mode (a control plane and two data-plane replicas on real Postgres and Redis; the
// affinity cases alternate replicas): see test/helpers/fallback-scenario.ts.

let s: FallbackScenario;
let gw: Gateway;

beforeAll(async () => {
  s = await startFallbackMocks();
  gw = await startGateway("distributed", { ...fallbackConfig(s), replicas: 2 });
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await s?.close();
});

describe("fallbacks and affinity, distributed", () => fallbackCases(() => ({ gw, s })));
