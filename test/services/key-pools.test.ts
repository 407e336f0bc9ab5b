import { keyPools } from "../helpers/key-pool-scenario.ts";
import { scenarioSuite } from "../helpers/scenario-suite.ts";

// Upstream key pools in distributed mode (a control plane and two data-plane replicas on real Postgres and Redis): see test/helpers/key-pool-scenario.ts.

scenarioSuite(keyPools, "distributed");
