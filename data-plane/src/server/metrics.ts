import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { SnapshotStore } from "../snapshot/store.ts";
import type { BreakerRegistry } from "../upstreams/breaker.ts";

/** Prometheus metrics of one data plane (GET /metrics). Labels stay low-cardinality: no key or account ids. */
export function createMetrics(store: SnapshotStore, breakers: () => BreakerRegistry) {
  const registry = new Registry();
  const requests = new Counter({ name: "modelgate_requests_total", help: "Requests by client protocol, model and status", labelNames: ["protocol", "model", "status"] as const, registers: [registry] });
  const latency = new Histogram({ name: "modelgate_request_duration_seconds", help: "Time to the last byte", labelNames: ["protocol", "stream"] as const, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers: [registry] });
  const ttft = new Histogram({ name: "modelgate_time_to_first_token_seconds", help: "Time until the upstream's first byte", labelNames: ["protocol"] as const, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] });
  const tokens = new Counter({ name: "modelgate_tokens_total", help: "Tokens by model and direction", labelNames: ["model", "direction"] as const, registers: [registry] });
  const upstreamErrors = new Counter({ name: "modelgate_upstream_errors_total", help: "Failed upstream attempts by upstream and reason", labelNames: ["upstream", "reason"] as const, registers: [registry] });
  new Gauge({
    name: "modelgate_snapshot_age_seconds",
    help: "Seconds since the last snapshot arrived (fail-static staleness)",
    registers: [registry],
    collect() {
      const age = store.ageMs();
      this.set(Number.isFinite(age) ? age / 1000 : -1);
    },
  });
  new Gauge({ name: "modelgate_snapshot_version", help: "Version of the snapshot in use", registers: [registry], collect() { this.set(store.version); } });
  new Gauge({
    name: "modelgate_upstream_breaker_open",
    help: "1 while an upstream's circuit breaker is open or half-open",
    labelNames: ["upstream"] as const,
    registers: [registry],
    collect() {
      for (const [name, state] of Object.entries(breakers().states(Date.now()))) this.set({ upstream: name }, state === "closed" ? 0 : 1);
    },
  });
  // Labelled children are looked up once per label combination: prom-client hashes a label object on every
  // inc/observe, which was a visible share of the request path's CPU. Combinations are few (protocols ×
  // models × statuses), and a model removed from the snapshot costs one stale map entry.
  const cache = new Map<string, unknown>();
  const child = <T>(id: string, make: () => T): T => {
    let c = cache.get(id) as T | undefined;
    if (c === undefined) {
      c = make();
      cache.set(id, c);
    }
    return c;
  };
  return {
    registry,
    requests,
    latency,
    ttft,
    tokens,
    upstreamErrors,
    /** One finished call: count, duration and tokens. */
    call(protocol: string, model: string, status: number, stream: boolean, seconds: number, promptTokens: number, completionTokens: number): void {
      child(`r\0${protocol}\0${model}\0${status}`, () => requests.labels(protocol, model, String(status))).inc();
      child(`l\0${protocol}\0${stream}`, () => latency.labels(protocol, String(stream))).observe(seconds);
      if (promptTokens) child(`tp\0${model}`, () => tokens.labels(model, "prompt")).inc(promptTokens);
      if (completionTokens) child(`tc\0${model}`, () => tokens.labels(model, "completion")).inc(completionTokens);
    },
    firstByte(protocol: string, seconds: number): void {
      child(`t\0${protocol}`, () => ttft.labels(protocol)).observe(seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
