import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { USAGE_ENTRY_FIELD } from "../contract/usage.ts";

// Usage-stream entries carry proof of origin. Anyone who can write to Redis could otherwise XADD usage events
// and have the control plane settle them (a negative cost was a credit: one XADD minted 1,000 units). The data
// plane signs each entry with an HMAC-SHA256 over the exact bytes of its `events` field (the JSON it wrote;
// no re-serialisation, so nothing to canonicalise), keyed by a key derived with HKDF from the master key that
// every process already holds; the control plane settles only entries whose signature checks. A replayed
// copy of a genuine entry is harmless: settlement is idempotent by request id.
//
// Cost: one HMAC over a few hundred bytes per event (about a microsecond), paid once per entry, not per event.

/** The stream entry's field holding the signature (base64url of the HMAC). */
export const USAGE_SIGNATURE_FIELD = "sig";

// The HKDF "info": names the key's one use, so the same master key yields unrelated keys for other purposes.
const KEY_INFO = "modelgate usage-stream entry signature v1";

/** The entry-signing key, derived from the master key (MODELGATE_MASTER_KEY). */
export function usageEntryKey(masterKey: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", masterKey, Buffer.alloc(0), KEY_INFO, 32));
}

/** The signature of an entry whose `events` field holds `json`. */
export function signUsageEntry(key: Buffer, json: string): string {
  return createHmac("sha256", key).update(json, "utf8").digest("base64url");
}

/** The fields of a signed usage-stream entry holding `json`, for XADD. */
export function signedEntryFields(key: Buffer, json: string): [string, string, string, string] {
  return [USAGE_ENTRY_FIELD, json, USAGE_SIGNATURE_FIELD, signUsageEntry(key, json)];
}

export type EntryCheck =
  { ok: true; json: string } | { ok: false; reason: "unsigned" | "bad signature" | "no events field" };

/**
 * Checks one stream entry's fields: its `events` value and its signature. Only a signed `events` entry is
 * accepted: the older unsigned one-event form (`event`) is refused like any other unsigned entry.
 */
export function checkUsageEntry(key: Buffer, fields: readonly string[]): EntryCheck {
  let json: string | undefined;
  let sig: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i];
    // A field given twice is refused: which one would be read is not a question a forger should get to ask.
    if (name === USAGE_ENTRY_FIELD) {
      if (json !== undefined) return { ok: false, reason: "bad signature" };
      json = fields[i + 1];
    } else if (name === USAGE_SIGNATURE_FIELD) {
      if (sig !== undefined) return { ok: false, reason: "bad signature" };
      sig = fields[i + 1];
    }
  }
  if (json === undefined) return { ok: false, reason: sig === undefined ? "unsigned" : "no events field" };
  if (sig === undefined) return { ok: false, reason: "unsigned" };
  const expected = createHmac("sha256", key).update(json, "utf8").digest();
  const given = Buffer.from(sig, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: "bad signature" };
  return { ok: true, json };
}
