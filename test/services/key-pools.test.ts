import { afterAll, beforeAll, describe } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import {
  type KeyPoolScenario,
  keyPoolCases,
  keyPoolConfig,
  measured,
  startKeyPoolMocks,
} from "../helpers/key-pool-scenario.ts";

// Upstream key pools in distributed mode (a control plane and two data-plane replicas on real Postgres and Redis): see test/helpers/key-pool-scenario.ts.

let s: KeyPoolScenario;
let gw: Gateway;

beforeAll(async () => {
  s = await startKeyPoolMocks();
  gw = await startGateway("distributed", { ...keyPoolConfig(s), replicas: 2 });
}, 180_000);

afterAll(async () => {
  console.log(`key pools, distributed: ${JSON.stringify(measured)}`);
  await gw?.stop();
  await s?.close();
});

describe("key pools, distributed", () => keyPoolCases(() => ({ gw, s })));
