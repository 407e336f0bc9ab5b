import { fallbacks } from "../helpers/fallback-scenario.ts";
import { scenarioSuite } from "../helpers/scenario-suite.ts";

// Fallbacks and prompt-cache affinity in embedded mode (one process): see test/helpers/fallback-scenario.ts.

scenarioSuite(fallbacks, "embedded");
