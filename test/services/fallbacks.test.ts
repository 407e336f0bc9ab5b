import { fallbacks } from "../helpers/fallback-scenario.ts";
import { scenarioSuite } from "../helpers/scenario-suite.ts";

// Fallbacks and prompt-cache affinity in distributed mode (a control plane and two data-plane replicas on real Postgres and Redis; the
// affinity cases alternate replicas): see test/helpers/fallback-scenario.ts.

scenarioSuite(fallbacks, "distributed");
