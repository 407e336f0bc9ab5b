import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { OutageLog } from "./outage-log.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

describe("OutageLog", () => {
  afterEach(() => void vi.useRealTimers());

  it("logs the state change once, one summary per interval, and the recovery once", async () => {
    vi.useFakeTimers();
    const { logger, lines } = capture();
    const log = new OutageLog(logger, 1_000);
    for (let i = 0; i < 500; i++) log.failure("redis", i % 2 ? "connection" : "usage write", new Error("ECONNREFUSED"));
    await vi.advanceTimersByTimeAsync(1_000);
    for (let i = 0; i < 10; i++) log.failure("redis", "connection", new Error("ECONNREFUSED"));
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.advanceTimersByTimeAsync(5_000); // nothing new: no line
    log.recovered("redis");
    log.recovered("redis");
    expect(lines.map((l) => l.msg)).toEqual([
      "redis unavailable; failures are summarised every 1 s until it is back",
      "redis still unavailable",
      "redis still unavailable",
      "redis available again",
    ]);
    expect(lines[1]!.failures).toEqual({ "usage write": 250, connection: 250 });
    expect(lines[2]!.failures).toEqual({ connection: 10 });
    expect(lines[3]!.failures).toEqual({ "usage write": 250, connection: 260 });
  });
});
