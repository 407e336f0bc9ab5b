import { usageEvent } from "../../../test/helpers/usage-event.ts";
import type { UsageEvent } from "../contract/usage.ts";
import { usageSinkContract } from "./sink.suite.ts";
import { InProcessUsageSink } from "./sink.ts";

usageSinkContract(
  "in-process",
  async () => {
    const delivered: string[] = [];
    let broken = false;
    let failures = 0;
    let failed: (() => void) | null = null;
    const sink = new InProcessUsageSink(
      async (events: UsageEvent[]) => {
        if (broken) throw new Error("database unavailable");
        delivered.push(...events.map((e) => e.requestId));
      },
      () => {
        failures++;
        failed?.();
      },
      500,
      5,
    );
    return {
      sink,
      delivered: async () => [...delivered],
      async breakDestination() {
        broken = true;
      },
      async heal() {
        // Heal only once the sink has met the failure (its batch is waiting to be tried again).
        if (failures === 0) await new Promise<void>((r) => (failed = r));
        broken = false;
      },
      cleanup: () => sink.flush(),
    };
  },
  usageEvent,
);
