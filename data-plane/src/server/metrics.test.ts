import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import type { SnapshotStore } from "../snapshot/store.ts";
import type { BreakerRegistry } from "../upstreams/breaker.ts";
import { createMetrics } from "./metrics.ts";

// Only what the gauges read at scrape time.
const store = {
  ageMs: () => 0,
  publishedAgeMs: () => 0,
  controlPlane: () => ({ heartbeatAgeMs: null }),
  version: 1,
  size: { keys: 0, accounts: 0, models: 0 },
  deletions: 3,
  fullLoads: 0,
} as unknown as SnapshotStore;
const breakers = () => ({ states: () => ({}) }) as unknown as BreakerRegistry;

describe("per-call metrics", () => {
  it("counts calls by protocol, model and status, their duration by stream, tokens by direction, and first bytes", async () => {
    const m = createMetrics(store, breakers);
    m.call("openai", "m-1", 200, false, 0.02, 9, 3);
    m.call("openai", "m-1", 200, false, 0.2, 1, 0);
    m.call("openai", "m-1", 429, true, 0.001, 0, 0);
    m.call("anthropic", "m-2", 200, true, 3, 5, 7);
    m.firstByte("openai", 0.004);
    m.firstByte("openai", 0.3);
    const text = await m.registry.metrics();
    expect(text).toContain('modelgate_requests_total{protocol="openai",model="m-1",status="200"} 2');
    expect(text).toContain('modelgate_requests_total{protocol="openai",model="m-1",status="429"} 1');
    expect(text).toContain('modelgate_requests_total{protocol="anthropic",model="m-2",status="200"} 1');
    expect(text).toContain('modelgate_request_duration_seconds_count{protocol="openai",stream="false"} 2');
    expect(text).toContain('modelgate_request_duration_seconds_bucket{le="0.025",protocol="openai",stream="false"} 1');
    expect(text).toContain('modelgate_request_duration_seconds_count{protocol="openai",stream="true"} 1');
    expect(text).toContain('modelgate_request_duration_seconds_sum{protocol="anthropic",stream="true"} 3');
    expect(text).not.toContain('protocol="anthropic",stream="false"');
    expect(text).toContain('modelgate_tokens_total{model="m-1",direction="prompt"} 10');
    expect(text).toContain('modelgate_tokens_total{model="m-1",direction="completion"} 3');
    expect(text).toContain('modelgate_tokens_total{model="m-2",direction="completion"} 7');
    expect(text).toContain('modelgate_time_to_first_token_seconds_count{protocol="openai"} 2');
    expect(text).toContain('modelgate_time_to_first_token_seconds_bucket{le="0.005",protocol="openai"} 1');
    expect(text).not.toContain('modelgate_time_to_first_token_seconds_count{protocol="anthropic"}');
  });
});

describe("policy gauges", () => {
  it("report what the replica holds, the deletions it remembers included", async () => {
    const text = await createMetrics(store, breakers).registry.metrics();
    expect(text).toContain('modelgate_policy_entities{kind="key"} 0');
    expect(text).toContain("modelgate_policy_deletions_remembered 3");
  });
});

describe("event-loop delay", () => {
  const quantile = (text: string, q: string) =>
    Number(new RegExp(`modelgate_event_loop_delay_seconds\\{quantile="${q}"\\} ([0-9.e+-]+)`).exec(text)?.[1]);

  it("reports the lateness beyond the sampling interval: an idle loop reads near 0, a 60 ms block about 50 ms", async () => {
    const m = createMetrics(store, breakers);
    // sampled while a call is served (loop-watch.ts)
    const call = new EventEmitter();
    m.loopWatch.call(call);
    await m.registry.metrics(); // resets the histogram: what follows starts now
    // The loop idles for ~20 samples (time itself is what is measured here), then one turn blocks it for 60 ms.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const until = performance.now() + 60;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const text = await m.registry.metrics();
    // perf_hooks records whole intervals (an idle loop ~10 ms); the series must not.
    expect(quantile(text, "p50")).toBeLessThan(0.008);
    expect(quantile(text, "max")).toBeGreaterThanOrEqual(0.045);
    call.emit("close");
    m.loopWatch.stop();
  });

  it("samples nothing while no call is served: a block then costs no call, and the series reads 0", async () => {
    const m = createMetrics(store, breakers);
    await m.registry.metrics();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const until = performance.now() + 60;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const text = await m.registry.metrics();
    expect(m.loopWatch.sampling).toBe(false);
    expect(quantile(text, "max")).toBe(0);
  });
});
