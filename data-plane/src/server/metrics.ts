import { monitorEventLoopDelay } from "node:perf_hooks";
import { Counter, Gauge, Registry } from "prom-client";
import { FastCounter, FastHistogram, type HistogramSeries, type Series } from "./series.ts";
import type { SnapshotStore } from "../snapshot/store.ts";
import type { BreakerRegistry } from "../upstreams/breaker.ts";
import { LoopWatch } from "./loop-watch.ts";

/** Prometheus metrics of one data plane (GET /metrics). Labels stay low-cardinality: no key or account ids. */
export function createMetrics(
  store: SnapshotStore,
  breakers: () => BreakerRegistry,
  localAdmissions: () => { granted: number; overrun: number } | null = () => null,
) {
  const registry = new Registry();
  // The per-call series are updated on every request: see series.ts.
  const requests = new FastCounter("modelgate_requests_total", "Requests by client protocol, model and status");
  const latency = new FastHistogram(
    "modelgate_request_duration_seconds",
    "Time to the last byte",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  );
  const ttft = new FastHistogram(
    "modelgate_time_to_first_token_seconds",
    "Time until the upstream's first byte",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  const tokens = new FastCounter("modelgate_tokens_total", "Tokens by model and direction");
  for (const m of [requests, latency, ttft, tokens]) registry.registerMetric(m as never);
  const upstreamErrors = new Counter({
    name: "modelgate_upstream_errors_total",
    help: "Failed upstream attempts by upstream and reason",
    labelNames: ["upstream", "reason"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "modelgate_snapshot_age_seconds",
    help: "Seconds since the last snapshot arrived (fail-static staleness)",
    registers: [registry],
    collect() {
      const age = store.ageMs();
      this.set(Number.isFinite(age) ? age / 1000 : -1);
    },
  });
  new Gauge({
    name: "modelgate_snapshot_published_age_seconds",
    help: "Seconds since the control plane built the snapshot in use (grows while the control plane is down)",
    registers: [registry],
    collect() {
      const a = store.publishedAgeMs();
      this.set(Number.isFinite(a) ? a / 1000 : -1);
    },
  });
  new Gauge({
    name: "modelgate_control_plane_heartbeat_age_seconds",
    help: "Seconds since the control plane's last heartbeat in Redis (-1: none seen, or embedded)",
    registers: [registry],
    collect() {
      const a = store.controlPlane().heartbeatAgeMs;
      this.set(a === null ? -1 : a / 1000);
    },
  });
  new Gauge({
    name: "modelgate_snapshot_version",
    help: "Highest policy version this replica holds",
    registers: [registry],
    collect() {
      this.set(store.version);
    },
  });
  new Gauge({
    name: "modelgate_policy_entities",
    help: "Keys, accounts and models this replica holds",
    labelNames: ["kind"] as const,
    registers: [registry],
    collect() {
      const size = store.size;
      this.set({ kind: "key" }, size.keys);
      this.set({ kind: "account" }, size.accounts);
      this.set({ kind: "model" }, size.models);
    },
  });
  new Gauge({
    name: "modelgate_policy_deletions_remembered",
    help: "Deleted keys and accounts this replica remembers (each until its next full load; a feed epoch's compaction bounds them)",
    registers: [registry],
    collect() {
      this.set(store.deletions);
    },
  });
  new Gauge({
    name: "modelgate_policy_full_loads_total",
    help: "Full loads of the policy feed since start",
    registers: [registry],
    collect() {
      this.set(store.fullLoads);
    },
  });
  // Event-loop delay since the previous scrape: what a full load or anything else costs the calls waiting
  // behind it. perf_hooks samples with a timer every `resolution` ms and records the whole interval between
  // two firings, so an idle loop reads ~10 ms, not 0; the series reports the lateness beyond the interval.
  // Sampled while calls are served (loop-watch.ts): a scrape with none since the previous one reads 0.
  const LOOP_RESOLUTION_MS = 10;
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  const loopWatch = new LoopWatch(loopDelay);
  const loopSeconds = (ns: number) => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1e3 : 0);
  new Gauge({
    name: "modelgate_event_loop_delay_seconds",
    help: "Event-loop delay (lateness beyond the 10 ms sampling interval) since the previous scrape while calls were served, by quantile (p50, p99, max)",
    labelNames: ["quantile"] as const,
    registers: [registry],
    collect() {
      this.set({ quantile: "p50" }, loopSeconds(loopDelay.percentile(50)));
      this.set({ quantile: "p99" }, loopSeconds(loopDelay.percentile(99)));
      this.set({ quantile: "max" }, loopSeconds(loopDelay.max));
      loopDelay.reset();
    },
  });
  new Gauge({
    name: "modelgate_upstream_breaker_open",
    help: "1 while an upstream's circuit breaker is open or half-open",
    labelNames: ["upstream"] as const,
    registers: [registry],
    collect() {
      for (const [name, state] of Object.entries(breakers().states(Date.now())))
        this.set({ upstream: name }, state === "closed" ? 0 : 1);
    },
  });
  new Counter({
    name: "modelgate_ratelimit_local_admissions_total",
    help: "Calls admitted without waiting for Redis (kind=granted) and those of them Redis found past a limit (kind=overrun), since start",
    labelNames: ["kind"] as const,
    registers: [registry],
    collect() {
      const local = localAdmissions();
      if (local === null) return;
      // The limiter keeps the counts; the series mirrors them at scrape time.
      this.reset();
      this.inc({ kind: "granted" }, local.granted);
      this.inc({ kind: "overrun" }, local.overrun);
    },
  });
  // The series one call touches, kept per protocol and model (and status), so a call builds no key strings
  // and no label closures: metrics.call was 0.5% of the data plane's busy time at c=64, mostly hashing a
  // fresh key string per series.
  interface CallSeries {
    byStatus: Map<number, Series>;
    /** created with the first call that reports such tokens, as before */
    prompt: Series | null;
    completion: Series | null;
  }
  const callSeries = new Map<string, Map<string, CallSeries>>();
  const seriesOf = (protocol: string, model: string): CallSeries => {
    let models = callSeries.get(protocol);
    if (models === undefined) callSeries.set(protocol, (models = new Map()));
    let s = models.get(model);
    if (s === undefined) models.set(model, (s = { byStatus: new Map(), prompt: null, completion: null }));
    return s;
  };
  const latencyOf = new Map<string, [HistogramSeries | null, HistogramSeries | null]>();
  const ttftOf = new Map<string, HistogramSeries>();
  return {
    registry,
    upstreamErrors,
    /** tell it of each call (not probes or scrapes): the loop's delay is sampled while calls are served */
    loopWatch,
    /** One finished call: count, duration and tokens. */
    call(
      protocol: string,
      model: string,
      status: number,
      stream: boolean,
      seconds: number,
      promptTokens: number,
      completionTokens: number,
    ): void {
      const s = seriesOf(protocol, model);
      let r = s.byStatus.get(status);
      if (r === undefined)
        s.byStatus.set(
          status,
          (r = requests.at(`${protocol}\0${model}\0${status}`, () => ({ protocol, model, status: String(status) }))),
        );
      r.value++;
      let l = latencyOf.get(protocol);
      if (l === undefined) latencyOf.set(protocol, (l = [null, null]));
      const i = stream ? 1 : 0;
      const ls = (l[i] ??= latency.at(`${protocol}\0${stream}`, () => ({ protocol, stream: String(stream) })));
      latency.observeIn(ls, seconds);
      if (promptTokens)
        (s.prompt ??= tokens.at(`${model}\0p`, () => ({ model, direction: "prompt" }))).value += promptTokens;
      if (completionTokens)
        (s.completion ??= tokens.at(`${model}\0c`, () => ({ model, direction: "completion" }))).value +=
          completionTokens;
    },
    firstByte(protocol: string, seconds: number): void {
      let t = ttftOf.get(protocol);
      if (t === undefined) ttftOf.set(protocol, (t = ttft.at(protocol, () => ({ protocol }))));
      ttft.observeIn(t, seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
