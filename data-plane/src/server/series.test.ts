import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { FastCounter, FastHistogram } from "./series.ts";

describe("request-path series rendered by prom-client", () => {
  it("renders counters and cumulative histogram buckets in the Prometheus text format", async () => {
    const registry = new Registry();
    const c = new FastCounter("t_requests_total", "Requests");
    const h = new FastHistogram("t_duration_seconds", "Duration", [0.1, 1]);
    registry.registerMetric(c as never);
    registry.registerMetric(h as never);
    const labels = { protocol: "openai" };
    c.inc("openai", () => labels);
    c.inc("openai", () => labels, 2);
    c.inc("gemini", () => ({ protocol: "gemini" }));
    for (const v of [0.05, 0.5, 0.7, 3]) h.observe("openai", () => labels, v);
    const text = await registry.metrics();
    expect(text).toContain("# TYPE t_requests_total counter");
    expect(text).toContain('t_requests_total{protocol="openai"} 3');
    expect(text).toContain('t_requests_total{protocol="gemini"} 1');
    expect(text).toContain("# TYPE t_duration_seconds histogram");
    expect(text).toContain('t_duration_seconds_bucket{le="0.1",protocol="openai"} 1');
    expect(text).toContain('t_duration_seconds_bucket{le="1",protocol="openai"} 3');
    expect(text).toContain('t_duration_seconds_bucket{le="+Inf",protocol="openai"} 4');
    expect(text).toContain('t_duration_seconds_sum{protocol="openai"} 4.25');
    expect(text).toContain('t_duration_seconds_count{protocol="openai"} 4');
  });
});
