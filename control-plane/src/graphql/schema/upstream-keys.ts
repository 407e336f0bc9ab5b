import type { Upstream } from "../../generated/prisma/client.ts";
import type { UpstreamHealth } from "../../stats/operator.ts";
import { keyView, setUpstreamKeyEnabled, upstreamKeyStates } from "../../services/upstream-keys.ts";
import { builder } from "../builder.ts";
import type { GqlContext } from "../context.ts";
import { UpstreamRef } from "./model.ts";
import { HealthRef } from "./operator-stats.ts";

// Operators: upstream key pools (docs/routing.md). A key's secret is write-only (UpstreamInput.keys); here are
// its id, weight and state: active, resting (rate limited for a while) or disabled, with why and since when.

interface KeyState {
  id: string;
  weight: number;
  state: string;
  reason: string | null;
  disabledAt: Date | null;
  breaker?: string | null;
}

const UpstreamKeyRef = builder.objectRef<KeyState>("UpstreamKey").implement({
  description: "One key of an upstream's pool: the operator's id for it, never its secret.",
  fields: (t) => ({
    id: t.exposeString("id"),
    weight: t.exposeInt("weight"),
    state: t.exposeString("state", {
      description:
        "active; resting (answered 429, unused until its retry-after passes); disabled (by the provider's refusal or an operator: see reason)",
    }),
    reason: t.exposeString("reason", {
      nullable: true,
      description:
        "why it is disabled: unauthorized (401), forbidden (403), payment_required (402), insufficient_quota, operator; rate_limited while resting",
    }),
    disabledAt: t.expose("disabledAt", { type: "DateTime", nullable: true }),
    breaker: t.string({
      nullable: true,
      description: "the key's own circuit breaker (closed, open, half_open); null where not available",
      resolve: (k) => k.breaker ?? null,
    }),
  }),
});

/** Every pool's key states, read once per request however many upstreams ask. */
const perRequest = new WeakMap<object, ReturnType<typeof upstreamKeyStates>>();
function statesOf(ctx: GqlContext) {
  let p = perRequest.get(ctx);
  if (p === undefined) perRequest.set(ctx, (p = upstreamKeyStates(ctx.app)));
  return p;
}

builder.objectField(UpstreamRef, "keys", (t) =>
  t.field({
    type: [UpstreamKeyRef],
    description: "the upstream's key pool (empty: its one apiKey, or none)",
    resolve: async (u: Upstream, _a, ctx) => (await statesOf(ctx)).get(u.name) ?? [],
  }),
);

builder.objectField(HealthRef, "keys", (t) =>
  t.field({
    type: [UpstreamKeyRef],
    description: "the upstream's key pool with each key's state and its breaker (empty: no pool)",
    resolve: async (h: UpstreamHealth, _a, ctx) => {
      const keys = (await statesOf(ctx)).get(h.name) ?? [];
      const breakers = ctx.app.breakers ? await ctx.app.breakers() : null;
      return keys.map((k) => ({ ...k, breaker: breakers ? (breakers[`${h.name}/${k.id}`] ?? "closed") : null }));
    },
  }),
);

builder.mutationFields((t) => ({
  setUpstreamKeyEnabled: t.field({
    type: UpstreamKeyRef,
    authScopes: { operator: true },
    description:
      "Operators: take a key of an upstream's pool out of the rotation, or bring it back (a key the gateway disabled stays so until enabled here).",
    args: {
      upstream: t.arg.string({ required: true, description: "the upstream's name" }),
      key: t.arg.string({ required: true, description: "the key's id" }),
      enabled: t.arg.boolean({ required: true }),
    },
    resolve: async (_r, args, ctx) => {
      const k = await setUpstreamKeyEnabled(ctx.app, args.upstream, args.key, args.enabled);
      return { ...keyView(k), state: k.enabled ? "active" : "disabled" };
    },
  }),
}));
