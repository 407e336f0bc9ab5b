import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkUsageEntry, signedEntryFields, signUsageEntry, usageEntryKey } from "./entry-signature.ts";

describe("usage entry signatures", () => {
  const master = randomBytes(32);
  const key = usageEntryKey(master);
  const json = JSON.stringify([{ requestId: "r1", cost: "5" }]);

  it("derives a key of its own from the master key: stable, and not the master key", () => {
    expect(usageEntryKey(Buffer.from(master))).toEqual(key);
    expect(key.equals(master)).toBe(false);
    expect(usageEntryKey(randomBytes(32)).equals(key)).toBe(false);
  });

  it("accepts what it signed, and nothing else", () => {
    expect(checkUsageEntry(key, signedEntryFields(key, json))).toEqual({ ok: true, json });
    const altered = json.replace('"5"', '"-5"');
    const [, , , sig] = signedEntryFields(key, json);
    expect(checkUsageEntry(key, ["events", altered, "sig", sig])).toEqual({ ok: false, reason: "bad signature" });
    expect(checkUsageEntry(key, ["events", json])).toEqual({ ok: false, reason: "unsigned" });
    expect(checkUsageEntry(key, ["event", json, "sig", sig])).toEqual({ ok: false, reason: "no events field" });
    expect(checkUsageEntry(usageEntryKey(randomBytes(32)), signedEntryFields(key, json)).ok).toBe(false);
    expect(checkUsageEntry(key, ["events", json, "sig", sig.slice(0, -2)]).ok).toBe(false);
    expect(checkUsageEntry(key, ["events", json, "sig", ""]).ok).toBe(false);
    // a second events field: which one is read must not be a forger's choice
    expect(checkUsageEntry(key, [...signedEntryFields(key, json), "events", altered]).ok).toBe(false);
    expect(signUsageEntry(key, json)).toBe(sig);
  });
});
