// Messages between the harness (run.ts) and the load-generator process (load-worker.ts).

export interface Request {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface Percentiles {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface ClosedLoopResult {
  requests: number;
  ok: number;
  rps: number;
  elapsedSec: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** autocannon's own latencies (whole milliseconds; the open-loop run has the fine-grained ones) */
  latencyMs: { p50: number; p99: number };
}

/** One connection, each request sent when the last answered, each timed with performance.now() (c=1). */
export interface SequentialResult {
  requests: number;
  rps: number;
  non2xx: number;
  errors: number;
  latencyMs: Percentiles;
}

export interface OpenLoopResult {
  sent: number;
  /** requests still unanswered 2 s after the last was sent (aborted, counted as infinitely slow) */
  unfinished: number;
  achievedRate: number;
  non2xx: number;
  errors: number;
  latencyMs: Percentiles;
  /** how late the scheduler sent each request (ms): a large value means the generator could not keep up */
  schedulerLateMs: Percentiles;
}

export interface StreamResult {
  failed: number;
  sequential: { ttfbMs: Percentiles; totalMs: Percentiles };
  concurrent: { clients: number; ttfbMs: Percentiles; totalMs: Percentiles };
}

export interface HoldResult {
  requested: number;
  withFirstByte: number;
  statusNot200: number;
  errors: number;
  waitedMs: number;
}

export type WorkerCommand =
  | { kind: "closed"; request: Request; connections: number; durationSec: number }
  | { kind: "open"; request: Request; rate: number; durationSec: number; connections: number }
  | { kind: "sequential"; request: Request; durationSec: number }
  | { kind: "streams"; request: Request; sequential: number; concurrent: number; perClient: number }
  | { kind: "hold"; request: Request; count: number; waitMs: number }
  | { kind: "release" };

export type WorkerReply =
  | { kind: "ready" }
  | { kind: "closed"; result: ClosedLoopResult }
  | { kind: "open"; result: OpenLoopResult }
  | { kind: "sequential"; result: SequentialResult }
  | { kind: "streams"; result: StreamResult }
  | { kind: "hold"; result: HoldResult }
  | { kind: "release" }
  | { kind: "error"; message: string };
