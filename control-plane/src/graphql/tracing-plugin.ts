import { getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import { SpanKind, SpanStatusCode, tracingNow } from "@modelgate/data-plane";

/**
 * One span per GraphQL operation (name, type, error count; never variables, which can hold secrets), when
 * tracing is on. Hand-written: @envelop/opentelemetry pins an SDK two major versions behind the one used here
 * and spans every resolver, which is more than an operator needs from a control plane.
 */
export const tracingPlugin: Plugin = {
  onExecute({ args }) {
    const tracing = tracingNow();
    if (!tracing) return;
    const op = getOperationAST(args.document, args.operationName);
    const type = op?.operation ?? "query";
    const name = args.operationName ?? op?.name?.value;
    const span = tracing.tracer.startSpan(name ? `graphql.${type} ${name}` : `graphql.${type}`, {
      kind: SpanKind.SERVER,
      attributes: { "graphql.operation.type": type, ...(name ? { "graphql.operation.name": name } : {}) },
    });
    return {
      onExecuteDone({ result }) {
        const errors = "errors" in result ? (result.errors?.length ?? 0) : 0;
        if (errors) {
          span.setAttribute("graphql.error.count", errors);
          span.setStatus({ code: SpanStatusCode.ERROR, message: "the operation answered with errors" });
        }
        span.end();
      },
    };
  },
};
