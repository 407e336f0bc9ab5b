import { describe, expect, it } from "vitest";
import { FULL_LEASE_MS, fullLeaseMs } from "./full-lease.ts";

describe("full publication lease length", () => {
  it("reads MODELGATE_POLICY_FULL_LEASE_MS as whole milliseconds of at least 1,000, refusing anything else", () => {
    expect(fullLeaseMs({})).toBe(FULL_LEASE_MS);
    expect(fullLeaseMs({ MODELGATE_POLICY_FULL_LEASE_MS: "60000" })).toBe(60_000);
    expect(fullLeaseMs({ MODELGATE_POLICY_FULL_LEASE_MS: "1000" })).toBe(1_000);
    for (const bad of ["999", "0", "-1", "1500.5", "long"])
      expect(() => fullLeaseMs({ MODELGATE_POLICY_FULL_LEASE_MS: bad })).toThrow(/whole number of milliseconds/);
    expect(() => fullLeaseMs({ MODELGATE_POLICY_FULL_LEASE_MS: "999" })).toThrow(
      new Error("MODELGATE_POLICY_FULL_LEASE_MS must be a whole number of milliseconds, at least 1000, not '999'"),
    );
  });
});
