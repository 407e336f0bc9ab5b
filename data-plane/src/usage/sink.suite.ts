// The behaviour every UsageSink must have; run by sink.test.ts (in-process) and sink.services.test.ts (Redis).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageEvent } from "../contract/usage.ts";
import type { UsageSink } from "./sink.ts";

export interface UsageSinkFixture {
  sink: UsageSink;
  /** the request ids that reached the sink's destination so far, in the order they arrived */
  delivered(): Promise<string[]>;
  /** makes the destination refuse what the sink hands it, until heal() */
  breakDestination(): Promise<void>;
  /** the destination takes events again; resolves once the sink has handed over what it held meanwhile */
  heal(): Promise<void>;
  cleanup(): Promise<void>;
}

export function usageSinkContract(
  name: string,
  setup: () => Promise<UsageSinkFixture>,
  event: (n: number) => UsageEvent,
): void {
  describe(`UsageSink contract: ${name}`, () => {
    let fx: UsageSinkFixture;
    let next = 1_000;
    const events = (count: number) => Array.from({ length: count }, () => event(next++));
    beforeAll(async () => {
      fx = await setup();
    });
    afterAll(async () => {
      await fx.cleanup();
    });

    it("delivers every event once, in the order emitted, and flush waits for them", async () => {
      const batch = events(25);
      const before = (await fx.delivered()).length;
      for (const e of batch) void fx.sink.emit(e);
      await fx.sink.flush();
      const got = (await fx.delivered()).slice(before);
      expect(got).toEqual(batch.map((e) => e.requestId));
    });

    it("hands each emit a promise that settles once its event is handed over, and never rejects", async () => {
      const [e] = events(1);
      const before = (await fx.delivered()).length;
      const p = fx.sink.emit(e!);
      await p; // undefined for a sink that makes no durability promise, else resolves
      await fx.sink.flush();
      expect((await fx.delivered()).slice(before)).toEqual([e!.requestId]);
    });

    it("while its destination refuses, emit neither throws nor rejects, and every event arrives once it heals", async () => {
      const before = (await fx.delivered()).length;
      await fx.breakDestination();
      const batch = events(10);
      const results = await Promise.allSettled(batch.map((e) => Promise.resolve().then(() => fx.sink.emit(e))));
      expect(results.every((r) => r.status === "fulfilled")).toBe(true);
      await fx.heal();
      await fx.sink.flush();
      const got = (await fx.delivered()).slice(before);
      expect([...got].sort()).toEqual(batch.map((e) => e.requestId).sort());
      expect(new Set(got).size).toBe(got.length);
    });
  });
}
