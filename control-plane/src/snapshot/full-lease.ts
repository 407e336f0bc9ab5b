import { wholeNumberEnv } from "@modelgate/data-plane";

// How long the full publication lease lasts unless renewed (redis-bus.ts beginFull: renewed a third of it apart
// while its holder publishes). It trades two things: when a holder dies, the other control planes wait up to
// this long before one of them takes over (at its next round); and a holder that cannot renew for two thirds of
// it (a long pause: a stop-the-world collection, a frozen VM, a Redis that does not answer) loses the lease, and
// its publication is abandoned (another's, or its next round's, publishes). 15 s suits a control plane with
// short pauses; raise it where pauses of ten seconds happen, lower it to take over sooner.

/** MODELGATE_POLICY_FULL_LEASE_MS's default. */
export const FULL_LEASE_MS = 15_000;

/** The shortest lease accepted: a renewal must go to Redis and back well within two thirds of it. */
const MIN_LEASE_MS = 1_000;

/** MODELGATE_POLICY_FULL_LEASE_MS: whole milliseconds, at least 1,000. */
export function fullLeaseMs(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumberEnv(env, "MODELGATE_POLICY_FULL_LEASE_MS", FULL_LEASE_MS, {
    unit: "milliseconds",
    min: MIN_LEASE_MS,
  });
}
