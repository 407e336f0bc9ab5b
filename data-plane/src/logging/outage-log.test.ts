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

  it("ends an outage whose failures stopped while the dependency is healthy, even with no 'ready' to say so", async () => {
    // Seen: a stray failure reported 1.8 s after Redis returned (the spool's stat of a segment just deleted)
    // reopened the outage, no "ready" followed, and "still unavailable" went on for ten minutes.
    vi.useFakeTimers();
    const { logger, lines } = capture();
    let up = false;
    const log = new OutageLog(logger, 1_000, Date.now, { healthy: () => up });
    log.failure("redis", "connection", new Error("ECONNREFUSED"));
    up = true;
    log.recovered("redis"); // quiet for less than the settle period: waits for it
    await vi.advanceTimersByTimeAsync(1_000);
    log.failure("redis", "usage write", new Error("ENOENT")); // the stray one, Redis up all along
    await vi.advanceTimersByTimeAsync(10_000);
    expect(log.isDown("redis")).toBe(false);
    expect(lines.map((l) => l.msg)).toEqual([
      "redis unavailable; failures are summarised every 1 s until it is back",
      "redis available again",
      "redis unavailable; failures are summarised every 1 s until it is back",
      "redis available again",
    ]);
  });

  it("does not take one connection's 'ready' for the dependency's recovery, and damps a failure right after it", async () => {
    // Seen: "available again" from one connection's ready, then 4 ms later "unavailable" from a spend-counter
    // write on another connection still reconnecting.
    vi.useFakeTimers();
    const { logger, lines } = capture();
    const ready = { a: false, b: false };
    const log = new OutageLog(logger, 30_000, Date.now, { healthy: () => ready.a && ready.b, settleMs: 500 });
    log.failure("redis", "connection", new Error("ECONNREFUSED"));
    await vi.advanceTimersByTimeAsync(2_000);
    ready.a = true;
    log.recovered("redis"); // b still down: not a recovery
    await vi.advanceTimersByTimeAsync(4);
    log.failure("redis", "spend write", new Error("Connection is closed."));
    ready.b = true;
    log.recovered("redis"); // both ready, but a failure 0 ms ago: wait for quiet
    await vi.advanceTimersByTimeAsync(100);
    log.failure("redis", "spend write", new Error("Connection is closed.")); // a straggler: still the same outage
    await vi.advanceTimersByTimeAsync(2_000);
    expect(lines.map((l) => l.msg)).toEqual([
      "redis unavailable; failures are summarised every 30 s until it is back",
      "redis available again",
    ]);
    expect(lines[1]!.failures).toEqual({ connection: 1, "spend write": 2 });
  });
});
