import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { OutageLog } from "./logging/outage-log.ts";
import type { SpendCounter } from "./billing/spend.ts";
import { MemorySpendCounter } from "./billing/spend.ts";
import { BudgetCalendar, budgetClockFromEnv } from "./billing/periods.ts";
import { RedisSpendCounter } from "./billing/spend-redis.ts";
import {
  DEFAULT_MAX_BYTES_PER_ACCOUNT,
  DEFAULT_MAX_PER_ACCOUNT,
  MemoryConversationStore,
  RedisConversationStore,
} from "./conversations/store.ts";
import { checkNumericSettings, wholeNumberEnv } from "./env.ts";
import { MemoryProviderIdRegistry, RedisProviderIdRegistry } from "./conversations/provider-ids.ts";
import { compileAllowlist } from "./policy/ip.ts";
import { MemoryRateLimiter } from "./ratelimit/memory.ts";
import { RedisRateLimiter } from "./ratelimit/redis.ts";
import type { RateLimiter } from "./ratelimit/types.ts";
import type { DataPlaneOptions } from "./server/context.ts";
import { createMetrics } from "./server/metrics.ts";
import { tracingNow } from "./telemetry/tracing.ts";
import type { SnapshotStore } from "./snapshot/store.ts";
import { BreakerRegistry } from "./upstreams/breaker.ts";
import { DemoTransport } from "./upstreams/demo.ts";
import { defaultRetryPolicy } from "./upstreams/retry.ts";
import { KeyHealth, RedisKeyHealth } from "./upstreams/key-pool/health.ts";
import { RetryBudget } from "./upstreams/key-pool/retry-budget.ts";
import { redisNames } from "./contract/redis-names.ts";
import { UndiciTransport } from "./upstreams/transport.ts";
import { answerLimitsFromEnv } from "./upstreams/answer-limits.ts";
import type { UsageSink } from "./usage/sink.ts";

export interface RuntimeInput {
  store: SnapshotStore;
  usage: UsageSink;
  logger: Logger;
  masterKey: Buffer;
  ready(): boolean;
  dependencies?(): Record<string, string>;
  env?: NodeJS.ProcessEnv;
  /** distributed mode: rate limits and spend shared through Redis (keys under `prefix`) */
  /** `subscriber`: a connection in subscriber mode, for announcements (pooled keys' states) */
  redis?: { client: Redis; prefix: string; subscriber?: Redis };
  /** Redis failures go here (one line per change of state and a periodic summary) instead of a line each */
  outage?: OutageLog;
}

/** Assembles the request path's dependencies: in-memory for one process, Redis-backed for replicas. */
export function createDataPlaneOptions(input: RuntimeInput): DataPlaneOptions & { close(): Promise<void> } {
  const env = input.env ?? process.env;
  // A bad number in any setting stops the start here, naming the variable, before anything listens.
  checkNumericSettings(env, "data");
  const onError = (what: string) => (err: unknown) =>
    input.outage
      ? input.outage.failure("redis", what, err)
      : input.logger.warn({ err: (err as Error)?.message ?? err }, what);
  let rateLimiter: RateLimiter;
  let redisLimiter: RedisRateLimiter | null = null;
  let spend: SpendCounter;
  if (input.redis) {
    rateLimiter = redisLimiter = new RedisRateLimiter(input.redis.client, {
      prefix: `${input.redis.prefix}rl:`,
      onError: onError("rate limiter: Redis unavailable, limiting in-process"),
      localFreeShare: localShare(env.MODELGATE_RATELIMIT_LOCAL_SHARE),
    });
    spend = new RedisSpendCounter(input.redis.client, {
      prefix: `${input.redis.prefix}spend:`,
      onError: onError("spend counter: Redis unavailable"),
    });
  } else {
    rateLimiter = new MemoryRateLimiter();
    spend = new MemorySpendCounter();
  }
  const breakers = new BreakerRegistry({
    consecutiveFailures: wholeNumberEnv(env, "MODELGATE_BREAKER_FAILURES", 5, { unit: "failures", min: 1 }),
    openMs: wholeNumberEnv(env, "MODELGATE_BREAKER_OPEN_MS", 30_000, { unit: "milliseconds", min: 1 }),
    minAccounts: wholeNumberEnv(env, "MODELGATE_BREAKER_MIN_ACCOUNTS", 2, { unit: "accounts", min: 1 }),
  });
  // Pooled upstream keys' health: shared by the replicas through Redis, read again when a change is announced
  // and polled in case an announcement was missed, so a key one replica saw refused is out of every replica's
  // rotation at once, and within a second at worst.
  const keyHealth = input.redis
    ? new RedisKeyHealth(
        input.redis.client,
        redisNames(input.redis.prefix),
        wholeNumberEnv(env, "MODELGATE_KEY_STATE_POLL_MS", 1_000, { unit: "milliseconds", min: 10 }),
        onError("upstream key states: Redis unavailable, this replica's own view only"),
        input.redis.subscriber,
      )
    : new KeyHealth();
  const retryBudget = new RetryBudget({
    ratio: wholeNumberEnv(env, "MODELGATE_RETRY_BUDGET_PERCENT", 20, { unit: "percent" }) / 100,
    minRetries: wholeNumberEnv(env, "MODELGATE_RETRY_BUDGET_MIN", 10, { unit: "retries" }),
  });
  const trusted = (env.MODELGATE_TRUSTED_PROXIES ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const transport = new UndiciTransport();
  // Stored responses (the Responses API's previous_response_id toward upstreams that keep no state): off unless
  // the operator turns them on, since the gateway otherwise keeps no conversation content.
  // Checked whether storing is on or not: the provider-id records below use the same TTL.
  const ttlMs = wholeNumberEnv(env, "MODELGATE_RESPONSES_TTL_S", 30 * 24 * 3600, { unit: "seconds", min: 1 }) * 1000;
  const storeOptions = {
    masterKey: input.masterKey,
    ttlMs,
    maxPerAccount: wholeNumberEnv(env, "MODELGATE_RESPONSES_MAX_PER_ACCOUNT", DEFAULT_MAX_PER_ACCOUNT, {
      unit: "stored responses",
      min: 1,
    }),
    maxBytesPerAccount: wholeNumberEnv(
      env,
      "MODELGATE_RESPONSES_MAX_BYTES_PER_ACCOUNT",
      DEFAULT_MAX_BYTES_PER_ACCOUNT,
      {
        unit: "bytes",
        min: 1024,
      },
    ),
  };
  const conversations =
    env.MODELGATE_RESPONSES_STORE === "1" || env.MODELGATE_RESPONSES_STORE === "true"
      ? input.redis
        ? new RedisConversationStore(input.redis.client, `${input.redis.prefix}responses:`, storeOptions)
        : new MemoryConversationStore(storeOptions)
      : null;
  // Whatever the store's setting: a passthrough upstream keeps conversations for the operator's one account,
  // so which tenant was given which of its ids is remembered for as long as the provider keeps them.
  const providerIds = input.redis
    ? new RedisProviderIdRegistry(input.redis.client, `${input.redis.prefix}pids:`, ttlMs)
    : new MemoryProviderIdRegistry(ttlMs);
  return {
    store: input.store,
    usage: input.usage,
    transport,
    demo: new DemoTransport(),
    rateLimiter,
    spend,
    calendar: new BudgetCalendar(budgetClockFromEnv(env)),
    breakers,
    keyHealth,
    retryBudget,
    retry: {
      ...defaultRetryPolicy,
      maxAttempts: wholeNumberEnv(env, "MODELGATE_RETRY_ATTEMPTS", defaultRetryPolicy.maxAttempts, {
        unit: "attempts",
        min: 1,
      }),
      baseDelayMs: wholeNumberEnv(env, "MODELGATE_RETRY_BASE_MS", defaultRetryPolicy.baseDelayMs, {
        unit: "milliseconds",
      }),
    },
    trustedProxies: compileAllowlist(trusted),
    metrics: createMetrics(
      input.store,
      () => breakers,
      () => redisLimiter?.local ?? null,
    ),
    logger: input.logger,
    tracing: tracingNow(),
    masterKey: input.masterKey,
    // 4 MiB: parsing a body holds the event loop about 10 ms per MB, so this keeps any one request's stall of the
    // process under 50 ms; raise it for larger (e.g. image) inputs.
    maxBodyBytes: wholeNumberEnv(env, "MODELGATE_MAX_BODY_BYTES", 4 * 1024 * 1024, { unit: "bytes", min: 1024 }),
    conversations,
    providerIds,
    answerLimits: answerLimitsFromEnv(env),
    opsToken: env.MODELGATE_METRICS_TOKEN || null,
    metricsOpen: env.MODELGATE_METRICS_OPEN === "1",
    ready: input.ready,
    dependencies: input.dependencies,
    async close() {
      await keyHealth.close();
      await rateLimiter.close();
      await spend.close();
      await transport.close();
    },
  };
}

/** MODELGATE_RATELIMIT_LOCAL_SHARE: unset (the limiter's default), a share between 0 and 1, or "off". */
function localShare(v: string | undefined): number | undefined {
  if (v === undefined || v === "") return undefined;
  if (v === "off") return 1;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 1)
    throw new Error(`MODELGATE_RATELIMIT_LOCAL_SHARE must be a number from 0 to 1, or "off"; got '${v}'`);
  return n;
}
