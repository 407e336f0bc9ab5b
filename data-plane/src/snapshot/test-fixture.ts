import type { AccountSnapshot, KeySnapshot } from "../contract/snapshot.ts";

// Test-only: a key and an account as a snapshot holds them, active and unlimited, for the store, money,
// load-worker and policy-check suites.

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

/** An account snapshot with `over` applied (id a1, active, 1000 in the wallet, no limits, nothing spent). */
export const testAccount = (over: Partial<AccountSnapshot> = {}): AccountSnapshot => ({
  id: "a1",
  name: "Acme",
  status: "active",
  balance: "1000",
  spent: "0",
  limits: { rpm: null, tpm: null, concurrency: null },
  contracts: {},
  ...over,
});
