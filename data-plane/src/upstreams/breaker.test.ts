import { describe, expect, it } from "vitest";
import { BreakerRegistry, CircuitBreaker, REFUSED } from "./breaker.ts";

const fail = (b: CircuitBreaker, now: number, times = 1) => {
  for (let i = 0; i < times; i++) b.failure(b.acquire(now), now);
};
const succeed = (b: CircuitBreaker, now: number, times = 1) => {
  for (let i = 0; i < times; i++) b.success(b.acquire(now), now);
};

describe("CircuitBreaker", () => {
  it("opens after N consecutive failures, and a success resets the run", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 3, minCalls: 1000 });
    fail(b, 0, 2);
    succeed(b, 0);
    fail(b, 0, 2);
    expect(b.state(0)).toBe("closed");
    fail(b, 0);
    expect(b.state(0)).toBe("open");
    expect(b.acquire(1)).toBe(REFUSED);
    expect(b.retryAfterMs(1_000)).toBe(29_000);
  });

  it("opens on an error rate over the window once it holds enough calls", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 100, errorRate: 0.5, minCalls: 10, windowMs: 10_000 });
    // alternate: 50% failures, but only 9 calls so far
    for (let i = 0; i < 9; i++) (i % 2 === 0 ? fail : succeed)(b, i * 100);
    expect(b.state(900)).toBe("closed");
    fail(b, 950); // 10 calls, 6 failures
    expect(b.state(950)).toBe("open");
  });

  it("forgets calls older than the window", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 100, errorRate: 0.5, minCalls: 4, windowMs: 10_000 });
    fail(b, 0, 3);
    succeed(b, 0); // 3 of 4 failed, but the rate is checked when a failure is recorded, and 3 calls were too few
    expect(b.state(0)).toBe("closed");
    // 10 s later the old calls are gone: 1 failure in 1 call is below minCalls
    fail(b, 10_000);
    expect(b.state(10_000)).toBe("closed");
    succeed(b, 10_001, 2);
    fail(b, 10_002); // 2 of 4 in the window
    expect(b.state(10_002)).toBe("open");
  });

  it("lets exactly one probe through after the cool-down; its success closes", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 1, openMs: 5_000 });
    fail(b, 0);
    expect(b.acquire(4_999)).toBe(REFUSED);
    expect(b.state(5_000)).toBe("half_open");
    const probe = b.acquire(5_000);
    expect(probe).not.toBe(REFUSED);
    expect(b.acquire(5_001)).toBe(REFUSED);
    b.success(probe, 5_100);
    expect(b.state(5_100)).toBe("closed");
    expect(b.acquire(5_101)).not.toBe(REFUSED);
  });

  it("re-opens for a new cool-down when the probe fails", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 1, openMs: 5_000 });
    fail(b, 0);
    const probe = b.acquire(5_000);
    b.failure(probe, 5_200);
    expect(b.state(5_200)).toBe("open");
    expect(b.retryAfterMs(5_200)).toBe(5_000);
    expect(b.state(10_199)).toBe("open");
    expect(b.state(10_200)).toBe("half_open");
  });

  it("frees the probe slot on cancel and after a lost probe's timeout", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 1, openMs: 5_000, probeTimeoutMs: 2_000 });
    fail(b, 0);
    const p1 = b.acquire(5_000);
    b.cancel(p1);
    const p2 = b.acquire(5_001);
    expect(p2).not.toBe(REFUSED);
    expect(b.acquire(7_000)).toBe(REFUSED);
    expect(b.retryAfterMs(7_000)).toBe(1);
    expect(b.acquire(7_001)).not.toBe(REFUSED);
  });

  it("ignores outcomes of calls that started in an earlier state", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 2, openMs: 5_000 });
    const slow = b.acquire(0);
    fail(b, 1, 2);
    expect(b.state(1)).toBe("open");
    // the slow call succeeds while open, then while half-open: neither closes the breaker
    b.success(slow, 2);
    expect(b.state(2)).toBe("open");
    const probe = b.acquire(5_001);
    b.success(slow, 5_002);
    expect(b.state(5_002)).toBe("half_open");
    b.failure(slow, 5_003);
    expect(b.state(5_003)).toBe("half_open");
    b.success(probe, 5_004);
    expect(b.state(5_004)).toBe("closed");
  });

  it("starts clean after closing", () => {
    const b = new CircuitBreaker({ consecutiveFailures: 2, openMs: 1_000 });
    fail(b, 0, 2);
    succeed(b, 1_000);
    fail(b, 1_001);
    expect(b.state(1_001)).toBe("closed");
  });
});

describe("BreakerRegistry", () => {
  it("keeps one breaker per upstream and reports their states", () => {
    const r = new BreakerRegistry({ consecutiveFailures: 1 });
    expect(r.get("a")).toBe(r.get("a"));
    fail(r.get("a"), 0);
    r.get("b");
    expect(r.states(1)).toEqual({ a: "open", b: "closed" });
  });
});
