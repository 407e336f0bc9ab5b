import type { Logger } from "pino";
import type { BudgetCalendar } from "../billing/periods.ts";
import type { SpendCounter } from "../billing/spend.ts";
import type { IpMatcher } from "../policy/ip.ts";
import type { RateLimiter } from "../ratelimit/types.ts";
import type { SnapshotStore } from "../snapshot/store.ts";
import type { BreakerRegistry } from "../upstreams/breaker.ts";
import type { RetryPolicy } from "../upstreams/retry.ts";
import type { KeyHealth } from "../upstreams/key-pool/health.ts";
import type { RetryBudget } from "../upstreams/key-pool/retry-budget.ts";
import type { UpstreamTransport } from "../upstreams/transport.ts";
import type { AnswerLimits } from "../upstreams/response-handler.ts";
import type { Tracing } from "../telemetry/tracing.ts";
import type { UsageSink } from "../usage/sink.ts";
import type { ConversationStore } from "../protocols/index.ts";
import type { ProviderIdRegistry } from "../conversations/provider-ids.ts";
import type { Metrics } from "./metrics.ts";

/** Everything the request path needs; each piece has an in-process and a Redis-backed implementation. */
export interface DataPlaneOptions {
  store: SnapshotStore;
  usage: UsageSink;
  transport: UpstreamTransport;
  /** answers upstreams of protocol `demo` in-process */
  demo: UpstreamTransport;
  rateLimiter: RateLimiter;
  spend: SpendCounter;
  /** budget periods (billing/periods.ts): the calendar and the clock budgets are decided by */
  calendar: BudgetCalendar;
  breakers: BreakerRegistry;
  retry: RetryPolicy;
  /** pooled upstream keys' states (disabled, resting, rate-limit headroom); absent: one per options object */
  keyHealth?: KeyHealth;
  /** retries as a share of calls; absent: one per options object with the defaults */
  retryBudget?: RetryBudget;
  /** proxies whose X-Forwarded-For is believed (null: none; the socket address is the client) */
  trustedProxies: IpMatcher | null;
  metrics: Metrics;
  logger: Logger;
  /** OpenTelemetry, when on (null: off, and the request path skips it) */
  tracing: Tracing | null;
  /** decrypts upstream credentials from the snapshot */
  masterKey: Buffer;
  maxBodyBytes: number;
  /** stored responses of stateful protocols (the Responses API); null unless MODELGATE_RESPONSES_STORE=1 */
  conversations: ConversationStore | null;
  /** provider-side ids (a passthrough Responses upstream's) each account was given; always on */
  providerIds: ProviderIdRegistry;
  /**
   * What the gateway accepts of an upstream's answer: the largest body read whole and the longest answer
   * (MODELGATE_UPSTREAM_MAX_ANSWER_BYTES / _MS; docs/security.md). Absent: unbounded (unit tests).
   */
  answerLimits?: AnswerLimits;
  /** how long a stream the client left is still read for its exact usage (default 30 s, see server/call.ts) */
  cutStreamDrainMs?: number;
  /** MODELGATE_METRICS_TOKEN: when set, /metrics and /readyz require it as a bearer token */
  opsToken?: string | null;
  /** MODELGATE_METRICS_OPEN=1: /metrics answers without a token when none is set (else it is refused) */
  metricsOpen?: boolean;
  /** the process is still starting or already draining */
  ready(): boolean;
  /** state of what the replica depends on (e.g. redis: "ready" | "reconnecting"), shown by /readyz */
  dependencies?(): Record<string, string>;
}
