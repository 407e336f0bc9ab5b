import { afterAll, beforeAll, describe } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import {
  type KeyPoolScenario,
  keyPoolCases,
  keyPoolConfig,
  measured,
  startKeyPoolMocks,
} from "../helpers/key-pool-scenario.ts";

// Upstream key pools in embedded mode (one process): see test/helpers/key-pool-scenario.ts.

let s: KeyPoolScenario;
let gw: Gateway;

beforeAll(async () => {
  s = await startKeyPoolMocks();
  gw = await startGateway("embedded", keyPoolConfig(s));
}, 180_000);

afterAll(async () => {
  console.log(`key pools, embedded: ${JSON.stringify(measured)}`);
  await gw?.stop();
  await s?.close();
});

describe("key pools, embedded", () => keyPoolCases(() => ({ gw, s })));
