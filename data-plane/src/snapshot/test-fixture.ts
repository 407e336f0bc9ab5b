import type { KeySnapshot } from "../contract/snapshot.ts";

// Test-only: a key as a snapshot holds it, active and unlimited, for the store, money and policy-check suites.

/** A key snapshot with `over` applied (id k1 of account a1, active, no limits, nothing spent). */
export const testKey = (over: Partial<KeySnapshot> = {}): KeySnapshot => ({
  id: "k1",
  accountId: "a1",
  name: "test",
  status: "active",
  expiresAt: null,
  quota: null,
  spent: "0",
  allowedModels: [],
  ipAllowlist: [],
  limits: { rpm: null, tpm: null, concurrency: null },
  ...over,
});
