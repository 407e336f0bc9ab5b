import { describe, expect, it } from "vitest";
import type { AccountSnapshot } from "../contract/snapshot.ts";
import { checkKeyPolicy, isModelAllowed, type PolicyInput } from "./check.ts";
import { testKey as makeKey } from "../snapshot/test-fixture.ts";

const NOW = Date.parse("2025-06-01T00:00:00.000Z");

const makeAccount = (over: Partial<AccountSnapshot> = {}): AccountSnapshot => ({
  id: "a1",
  name: "Acme",
  status: "active",
  balance: "1000000",
  limits: { rpm: null, tpm: null, concurrency: null },
  contracts: {},
  ...over,
});
const input = (over: Partial<PolicyInput> = {}): PolicyInput => ({
  key: makeKey(),
  account: makeAccount(),
  model: "acme-chat-2025-01-01",
  clientIp: "203.0.113.5",
  now: NOW,
  spend: { keySpent: 0n, accountSpent: 0n },
  ...over,
});
const refusal = (over: Partial<PolicyInput>) => {
  const err = checkKeyPolicy(input(over));
  return err && { status: err.status, kind: err.kind, code: err.code, message: err.message, headers: err.headers };
};

describe("checkKeyPolicy", () => {
  it("lets an unrestricted active key through", () => {
    expect(checkKeyPolicy(input())).toBeNull();
  });

  it("refuses a revoked key with 401 key_revoked", () => {
    expect(refusal({ key: makeKey({ status: "revoked" }) })).toEqual({
      status: 401,
      kind: "authentication",
      code: "key_revoked",
      message: "This API key has been revoked.",
      headers: {},
    });
  });

  it("refuses an expired key with 401 key_expired, from the expiry instant on", () => {
    const key = makeKey({ expiresAt: "2025-06-01T00:00:00.000Z" });
    expect(refusal({ key, now: NOW - 1 })).toBeNull();
    expect(refusal({ key, now: NOW })).toMatchObject({
      status: 401,
      code: "key_expired",
      message: "This API key expired at 2025-06-01T00:00:00.000Z.",
    });
  });

  it("treats an unparsable expiry as expired", () => {
    expect(refusal({ key: makeKey({ expiresAt: "soon" }) })).toMatchObject({ status: 401, code: "key_expired" });
  });

  it("refuses a disabled account with 403 account_disabled", () => {
    expect(refusal({ account: makeAccount({ status: "disabled" }) })).toMatchObject({
      status: 403,
      kind: "permission",
      code: "account_disabled",
    });
  });

  it("enforces the IP allowlist, IPv4-mapped addresses included, and fails closed on an unknown client", () => {
    const key = makeKey({ ipAllowlist: ["198.51.100.0/24", "2001:db8::/32"] });
    expect(refusal({ key, clientIp: "198.51.100.77" })).toBeNull();
    expect(refusal({ key, clientIp: "::ffff:198.51.100.77" })).toBeNull();
    expect(refusal({ key, clientIp: "2001:db8::1" })).toBeNull();
    expect(refusal({ key, clientIp: "203.0.113.5" })).toEqual({
      status: 403,
      kind: "permission",
      code: "ip_not_allowed",
      message: "This API key does not accept requests from 203.0.113.5.",
      headers: {},
    });
    expect(refusal({ key, clientIp: null })).toMatchObject({ status: 403, code: "ip_not_allowed" });
  });

  it("enforces the allowed models with 403 model_not_allowed naming param model", () => {
    const key = makeKey({ allowedModels: ["acme-mini-2025-01-01"] });
    expect(refusal({ key, model: "acme-mini-2025-01-01" })).toBeNull();
    const err = checkKeyPolicy(input({ key }));
    expect(err?.status).toBe(403);
    expect(err?.code).toBe("model_not_allowed");
    expect(err?.param).toBe("model");
    expect(isModelAllowed(key, "acme-mini-2025-01-01")).toBe(true);
    expect(isModelAllowed(key, "acme-chat-2025-01-01")).toBe(false);
    expect(isModelAllowed(makeKey(), "anything-2025-01-01")).toBe(true);
  });

  it("refuses with 429 insufficient_quota once snapshot spent + unsettled spend reaches the quota", () => {
    const key = makeKey({ quota: "1000", spent: "600" });
    expect(refusal({ key, spend: { keySpent: 399n, accountSpent: 0n } })).toBeNull();
    expect(refusal({ key, spend: { keySpent: 400n, accountSpent: 0n } })).toEqual({
      status: 429,
      kind: "rate_limit",
      code: "insufficient_quota",
      message: "This API key has used up its spending quota; ask the account operator to raise it.",
      headers: { "x-should-retry": "false" },
    });
    expect(refusal({ key: makeKey({ quota: "0" }) })).toMatchObject({ code: "insufficient_quota" });
  });

  it("refuses with 402 insufficient_balance once balance − unsettled account spend is not positive", () => {
    expect(refusal({ spend: { keySpent: 0n, accountSpent: 999_999n } })).toBeNull();
    expect(refusal({ spend: { keySpent: 0n, accountSpent: 1_000_000n } })).toMatchObject({
      status: 402,
      kind: "payment_required",
      code: "insufficient_balance",
    });
    expect(refusal({ account: makeAccount({ balance: "-5" }) })).toMatchObject({ code: "insufficient_balance" });
  });

  it("handles money beyond 2^53 exactly", () => {
    const key = makeKey({ quota: "9007199254740993", spent: "9007199254740992" });
    expect(refusal({ key })).toBeNull();
    expect(refusal({ key, spend: { keySpent: 1n, accountSpent: 0n } })).toMatchObject({ code: "insufficient_quota" });
  });

  it("checks in a fixed order: revoked, expired, account, IP, model, quota, balance", () => {
    const all = {
      key: makeKey({
        status: "revoked",
        expiresAt: "2000-01-01T00:00:00.000Z",
        ipAllowlist: ["10.0.0.0/8"],
        allowedModels: ["x-2025-01-01"],
        quota: "0",
      }),
      account: makeAccount({ status: "disabled", balance: "0" }),
    };
    const codes: string[] = [];
    let over: Partial<PolicyInput> = all;
    const fixes: ((o: Partial<PolicyInput>) => Partial<PolicyInput>)[] = [
      (o) => ({ ...o, key: { ...o.key!, status: "active" } }),
      (o) => ({ ...o, key: { ...o.key!, expiresAt: null } }),
      (o) => ({ ...o, account: { ...o.account!, status: "active" } }),
      (o) => ({ ...o, key: { ...o.key!, ipAllowlist: [] } }),
      (o) => ({ ...o, key: { ...o.key!, allowedModels: [] } }),
      (o) => ({ ...o, key: { ...o.key!, quota: null } }),
      (o) => ({ ...o, account: { ...o.account!, balance: "1" } }),
    ];
    for (const fix of fixes) {
      codes.push(checkKeyPolicy(input(over))?.code ?? "ok");
      over = fix(over);
    }
    codes.push(checkKeyPolicy(input(over))?.code ?? "ok");
    expect(codes).toEqual([
      "key_revoked",
      "key_expired",
      "account_disabled",
      "ip_not_allowed",
      "model_not_allowed",
      "insufficient_quota",
      "insufficient_balance",
      "ok",
    ]);
  });

  it("compiles a key once per snapshot object", () => {
    const key = makeKey({ ipAllowlist: ["10.0.0.1"] });
    expect(refusal({ key, clientIp: "10.0.0.1" })).toBeNull();
    // Mutating the snapshot in place is not supported: the compiled form is kept per object.
    key.ipAllowlist = ["10.0.0.2"];
    expect(refusal({ key, clientIp: "10.0.0.1" })).toBeNull();
    expect(refusal({ key: { ...key }, clientIp: "10.0.0.1" })).toMatchObject({ code: "ip_not_allowed" });
  });
});
