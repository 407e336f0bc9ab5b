import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import type * as SdkTrace from "@opentelemetry/sdk-trace";
import type { Sampler } from "@opentelemetry/sdk-trace";

// OpenTelemetry traces, exported over OTLP/HTTP with the official packages and configured with the standard
// OTEL_* variables. Off unless an OTLP endpoint (or OTEL_TRACES_EXPORTER=otlp) is set: then `startTracing`
// returns null and every caller skips its tracing behind one null check, so a gateway without tracing pays
// nothing on the hot path. No global provider is registered: spans are created from the object returned here,
// and parents are passed explicitly (no async-context bookkeeping on every await). The SDK, the exporter and
// their dependencies load only when tracing is on (about 15 MB of a replica's memory otherwise).

export interface Tracing {
  tracer: Tracer;
  /** the caller's trace context from its `traceparent`/`tracestate` headers (the root context if none) */
  extract(headers: Record<string, string | string[] | undefined>): Context;
  /** `traceparent`/`tracestate` for an outgoing call made inside `span` */
  inject(span: Span, headers: Record<string, string>): void;
  /** a child span of `parent` (a span or a context) */
  child(name: string, parent: Span | Context, attributes?: Attributes, kind?: SpanKind): Span;
  /** exports what is still buffered; call before exiting */
  shutdown(): Promise<void>;
}

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== "" && exporter !== "otlp") return false; // "none" (or one we do not ship)
  return exporter === "otlp" || !!env.OTEL_EXPORTER_OTLP_ENDPOINT || !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the specification names them (default parentbased_always_on). */
function samplerFrom(env: NodeJS.ProcessEnv, sdk: typeof SdkTrace): Sampler {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = sdk;
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  const r = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(r);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(r) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

export async function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingConfigured(env)) return null;
  const [sdk, { W3CTraceContextPropagator }, { OTLPTraceExporter }, resources] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/core"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
  ]);
  const { BatchSpanProcessor, TracerProvider } = sdk;
  const { detectResources, envDetector, resourceFromAttributes } = resources;
  const num = (v: string | undefined, d: number) => (v && Number.isFinite(Number(v)) ? Number(v) : d);
  const fromEnv = detectResources({ detectors: [envDetector] }); // OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME
  const resource = resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || serviceName }).merge(fromEnv);
  const provider = new TracerProvider({
    resource,
    sampler: samplerFrom(env, sdk),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(), // reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT
        scheduledDelayMillis: num(env.OTEL_BSP_SCHEDULE_DELAY, 5_000),
        maxQueueSize: num(env.OTEL_BSP_MAX_QUEUE_SIZE, 2_048),
        maxExportBatchSize: num(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512),
        exportTimeoutMillis: num(env.OTEL_BSP_EXPORT_TIMEOUT, 30_000),
      }),
    ],
  });
  const tracer = provider.getTracer("modelgate");
  const propagator = new W3CTraceContextPropagator();
  const asContext = (parent: Span | Context): Context =>
    "spanContext" in parent ? trace.setSpan(ROOT_CONTEXT, parent) : parent;
  return {
    tracer,
    extract: (headers) => propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter),
    inject: (span, headers) => propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter),
    child: (name, parent, attributes, kind = SpanKind.INTERNAL) =>
      tracer.startSpan(name, { kind, attributes }, asContext(parent)),
    shutdown: () => provider.shutdown(),
  };
}

let current: Tracing | null | undefined;

/** The process's tracing, started once by its entry point (the service name is the entry's). */
export async function initTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (current === undefined) current = await startTracing(serviceName, env);
  return current;
}

/** The process's tracing, or null when it is off (or no entry point started it). */
export const tracingNow = (): Tracing | null => current ?? null;

/** Ends a span as failed with the error's message (never a body, a key or a prompt). */
export function endWithError(span: Span, err: unknown, type?: string): void {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  if (type) span.setAttribute("error.type", type);
  span.end();
}

/** Runs `fn` inside a span named `name`, ended when it settles. */
export async function inSpan<T>(
  tracing: Tracing | null,
  name: string,
  attributes: Attributes,
  fn: (span: Span | null) => Promise<T>,
): Promise<T> {
  if (!tracing) return fn(null);
  const span = tracing.tracer.startSpan(name, { attributes });
  try {
    const out = await fn(span);
    span.end();
    return out;
  } catch (err) {
    endWithError(span, err, err instanceof Error ? err.name : "error");
    throw err;
  }
}

export { SpanKind, SpanStatusCode };
export type { Span };
