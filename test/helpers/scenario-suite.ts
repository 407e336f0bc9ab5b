import { afterAll, beforeAll, describe } from "vitest";
import { type Gateway, type Mode, startGateway } from "./gateway.ts";

// A scenario run the same in both modes (key pools, fallbacks): its mocks and a gateway started before the
// cases and stopped after, embedded in one process or distributed (a control plane and two data-plane
// replicas on real Postgres and Redis).

export interface Scenario<S extends { close(): Promise<void> }> {
  /** The describe block's name, before the mode. */
  name: string;
  start(): Promise<S>;
  config(s: S): { config: unknown; env: NodeJS.ProcessEnv };
  cases(get: () => { gw: Gateway; s: S }): void;
  /** Said once the cases have run (figures they measured). */
  report?(mode: Mode): void;
}

export function scenarioSuite<S extends { close(): Promise<void> }>(scenario: Scenario<S>, mode: Mode): void {
  let s: S;
  let gw: Gateway;

  beforeAll(async () => {
    s = await scenario.start();
    const options = scenario.config(s);
    gw = await startGateway(mode, mode === "distributed" ? { ...options, replicas: 2 } : options);
  }, 180_000);

  afterAll(async () => {
    scenario.report?.(mode);
    await gw?.stop();
    await s?.close();
  });

  describe(`${scenario.name}, ${mode}`, () => scenario.cases(() => ({ gw, s })));
}
