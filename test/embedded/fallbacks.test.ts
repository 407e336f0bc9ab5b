import { afterAll, beforeAll, describe } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import {
  type FallbackScenario,
  fallbackCases,
  fallbackConfig,
  startFallbackMocks,
} from "../helpers/fallback-scenario.ts";

// Fallbacks and prompt-cache affinity in embedded mode (one process): see test/helpers/fallback-scenario.ts.

let s: FallbackScenario;
let gw: Gateway;

beforeAll(async () => {
  s = await startFallbackMocks();
  gw = await startGateway("embedded", fallbackConfig(s));
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await s?.close();
});

describe("fallbacks and affinity, embedded", () => fallbackCases(() => ({ gw, s })));
