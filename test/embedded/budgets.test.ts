import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, it } from "vitest";
import { budgetConfig, operatorEnv, runBudgetScenario, type BudgetScenario } from "../helpers/budget-scenario.ts";
import { startGateway } from "../helpers/gateway.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Budgets in embedded mode (one process): see test/helpers/budget-scenario.ts.

const dir = mkdtempSync(join(tmpdir(), "mg-budget-clock-"));
const clockFile = join(dir, "offset");
writeFileSync(clockFile, "0");
let mock: OpenAIMock;
let s: BudgetScenario;

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-budget");
  mock.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
  const gw = await startGateway("embedded", {
    config: budgetConfig(mock.url),
    env: {
      ...operatorEnv,
      MODELGATE_WEBHOOK_ALLOW_PRIVATE: "1",
      BUDGET_UPSTREAM_KEY: "sk-upstream-budget",
      MODELGATE_TEST_CLOCK_FILE: clockFile,
    },
  });
  s = { gw, clockFile, offset: 0 };
});

afterAll(async () => {
  await s?.gw.stop();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("enforces key and account budgets, refuses in each protocol's shape, and resets at midnight", () =>
  runBudgetScenario(s));
