import { operatorUsage, upstreamHealth, type GroupTotals, type UpstreamHealth } from "../../stats/operator.ts";
import { builder } from "../builder.ts";
import { UsageFiguresRef } from "./usage.ts";

// Operators: usage across every customer (by customer, model and upstream) and the upstreams' live health.

const GroupRef = builder.objectRef<GroupTotals>("UsageGroup").implement({
  interfaces: [UsageFiguresRef],
  fields: (t) => ({
    key: t.exposeString("key", { description: "account id, model id or upstream name" }),
    label: t.exposeString("label", { nullable: true, description: "the account's name (by customer)" }),
  }),
});

const OperatorUsageRef = builder
  .objectRef<{ byAccount: GroupTotals[]; byModel: GroupTotals[]; byUpstream: GroupTotals[] }>("OperatorUsage")
  .implement({
    fields: (t) => ({
      byAccount: t.field({ type: [GroupRef], resolve: (u) => u.byAccount }),
      byModel: t.field({ type: [GroupRef], resolve: (u) => u.byModel }),
      byUpstream: t.field({
        type: [GroupRef],
        description: '"" for calls that reached no upstream',
        resolve: (u) => u.byUpstream,
      }),
    }),
  });

export const HealthRef = builder.objectRef<UpstreamHealth>("UpstreamHealth").implement({
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    enabled: t.exposeBoolean("enabled"),
    breaker: t.exposeString("breaker", {
      nullable: true,
      description:
        "closed, open or half-open; in distributed mode the worst state any live replica reports (every 2 s); null where no breaker states are available",
    }),
    requests: t.exposeInt("requests"),
    errors: t.exposeInt("errors"),
    errorRate: t.float({ nullable: true, resolve: (h) => (h.requests ? h.errors / h.requests : null) }),
    latencyAvgMs: t.exposeInt("latencyAvgMs", { nullable: true }),
    latencyP95Ms: t.exposeInt("latencyP95Ms", { nullable: true }),
    ttftAvgMs: t.exposeInt("ttftAvgMs", { nullable: true, description: "time to first token (streams)" }),
    ttftP95Ms: t.exposeInt("ttftP95Ms", { nullable: true }),
    lastCallAt: t.expose("lastCallAt", { type: "DateTime", nullable: true }),
  }),
});

builder.queryFields((t) => ({
  operatorUsage: t.field({
    type: OperatorUsageRef,
    authScopes: { operator: true },
    description: "Operators: usage across every customer by customer, model and upstream (default: the last 7 days).",
    args: { from: t.arg({ type: "DateTime" }), to: t.arg({ type: "DateTime" }) },
    resolve: (_r, args, ctx) => {
      const to = args.to ?? new Date();
      return operatorUsage(ctx.app, args.from ?? new Date(to.getTime() - 7 * 86_400_000), to);
    },
  }),
  upstreamHealth: t.field({
    type: [HealthRef],
    authScopes: { operator: true },
    description:
      "Operators: each upstream's breaker state and its calls, errors, latency and TTFT over the last minutes.",
    args: { minutes: t.arg.int({ defaultValue: 15 }) },
    resolve: (_r, args, ctx) => upstreamHealth(ctx.app, ctx.app.breakers, args.minutes ?? 15),
  }),
}));
