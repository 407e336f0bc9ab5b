import { keyPools } from "../helpers/key-pool-scenario.ts";
import { scenarioSuite } from "../helpers/scenario-suite.ts";

// Upstream key pools in embedded mode (one process): see test/helpers/key-pool-scenario.ts.

scenarioSuite(keyPools, "embedded");
