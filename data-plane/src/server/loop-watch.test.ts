import { EventEmitter } from "node:events";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LoopWatch } from "./loop-watch.ts";

/** A histogram that records its switches. */
function recorder() {
  const switches: string[] = [];
  return {
    switches,
    enable: () => (switches.push("on"), true),
    disable: () => (switches.push("off"), true),
  };
}

describe("LoopWatch", () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it("samples from a call's start until idleMs after the last call in flight ended", () => {
    const h = recorder();
    const w = new LoopWatch(h, 2_000);
    expect(w.sampling).toBe(false);
    const a = new EventEmitter();
    const b = new EventEmitter();
    w.call(a);
    w.call(b);
    expect(h.switches).toEqual(["on"]);
    // a long call keeps it on, however long it runs
    vi.advanceTimersByTime(10_000);
    a.emit("close");
    vi.advanceTimersByTime(10_000);
    expect(w.sampling).toBe(true);
    // the last call ends: on for idleMs more, then off
    b.emit("close");
    vi.advanceTimersByTime(1_500);
    expect(w.sampling).toBe(true);
    vi.advanceTimersByTime(2_500);
    expect(w.sampling).toBe(false);
    expect(h.switches).toEqual(["on", "off"]);
    // nothing wakes while off
    expect(vi.getTimerCount()).toBe(0);
    // the next call turns it on again
    const c = new EventEmitter();
    w.call(c);
    expect(h.switches).toEqual(["on", "off", "on"]);
    c.emit("close");
    vi.advanceTimersByTime(4_000);
    expect(h.switches).toEqual(["on", "off", "on", "off"]);
  });

  it("stays on under a steady trickle of short calls", () => {
    const h = recorder();
    const w = new LoopWatch(h, 2_000);
    for (let i = 0; i < 100; i++) {
      const r = new EventEmitter();
      w.call(r);
      r.emit("close");
      vi.advanceTimersByTime(500);
    }
    expect(h.switches).toEqual(["on"]);
  });
});

describe("LoopWatch with perf_hooks", () => {
  it("records the loop's delay while a call runs, and nothing once it is off", async () => {
    const h = monitorEventLoopDelay({ resolution: 10 });
    const w = new LoopWatch(h, 50);
    const call = new EventEmitter();
    w.call(call);
    // block the loop well past the resolution: a sample records it
    await new Promise((r) => setTimeout(r, 30));
    const until = performance.now() + 60;
    while (performance.now() < until);
    await new Promise((r) => setTimeout(r, 30));
    expect(h.max / 1e6).toBeGreaterThanOrEqual(50);
    call.emit("close");
    await vi.waitFor(() => expect(w.sampling).toBe(false), { timeout: 5_000, interval: 20 });
    h.reset();
    const idleUntil = performance.now() + 60;
    while (performance.now() < idleUntil);
    await new Promise((r) => setTimeout(r, 50));
    expect(h.count).toBe(0);
  });
});
