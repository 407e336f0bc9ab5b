// The data plane's one public entry: what the control plane (and the embedded product) may use.
// Everything else under src/ is internal and may change without notice.
export type { ModelSnapshot, PolicyChange, RedisNames, Snapshot, UsageEvent } from "./contract/index.ts";
export {
  entityJson,
  entityOfMoney,
  isMoneyKind,
  POLICY_SHARDS,
  readUsageEvent,
  redisNames,
  shardOf,
  USAGE_ENTRY_FIELD,
  usageEntryEvents,
  usageEventSchema,
  usageShardCount,
  usageShards,
  versionOf,
  OPERATOR_PROTOCOLS,
  WIRE_PROTOCOLS,
  enumName,
  fromEnumName,
} from "./contract/index.ts";
export type { OperatorProtocol, UpstreamProtocol } from "./contract/index.ts";
export {
  connectRedis,
  duplicateRedis,
  isCluster,
  isRedisAuthError,
  isRedisUnavailableError,
  onCredentialsRefusedAtStart,
  redactRedisUrl,
  redisUrlHasCredentials,
  subscribeWhenReady,
} from "./redis/connect.ts";
export { open, parseMasterKey, seal } from "./crypto/secret-box.ts";
export type { KeyDisabled, KeyEntry } from "./upstreams/key-pool/health.ts";
export { initTracing, inSpan, SpanKind, SpanStatusCode, tracingNow } from "./telemetry/tracing.ts";
export { createLogger } from "./logger.ts";
export { singleFlight } from "./redis/single-flight.ts";
export { OutageLog } from "./logging/outage-log.ts";
export { compileAllowlist } from "./policy/ip.ts";
export { resolveClientIp } from "./policy/client-ip.ts";
export { createGatewayServer } from "./http/server.ts";
export { createDataPlaneOptions } from "./runtime.ts";
export { checkNumericSettings, NUMERIC_SETTINGS, numberEnv, wholeNumberEnv } from "./env.ts";
export { createDataPlaneHandler } from "./server/app.ts";
export { newRequestId } from "./server/request-id.ts";
export { SnapshotStore } from "./snapshot/store.ts";
export { InProcessUsageSink } from "./usage/sink.ts";
export {
  checkUsageEntry,
  signedEntryFields,
  signUsageEntry,
  usageEntryKey,
  USAGE_SIGNATURE_FIELD,
} from "./usage/entry-signature.ts";
export {
  BudgetCalendar,
  budgetClockFromEnv,
  budgetPeriods,
  isTimeZone,
  periodAdjective,
  periodBounds,
  type BudgetPeriod,
  type PeriodBounds,
} from "./billing/periods.ts";
export { computeCost, unitPrices } from "./billing/cost.ts";
export { providers, PROVIDERS, providerOf } from "./providers/index.ts";
export type { Provider, ProviderName } from "./providers/index.ts";
