import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from "node:crypto";

// Opaque bearer secrets (sessions, personal access tokens, invitations) are random base64url text behind a
// recognisable prefix; only their SHA-256 is stored. Short codes (e-mail verification, recovery codes) are
// keyed with HMAC under the master key, so a database dump alone cannot brute-force six digits.

export const SESSION_PREFIX = "mgs_";
export const PAT_PREFIX = "mgp_";
export const INVITE_PREFIX = "mgi_";

export const randomToken = (prefix: string, bytes = 32) => prefix + randomBytes(bytes).toString("base64url");
export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
export const hmacCode = (key: Buffer, purpose: string, code: string) =>
  createHmac("sha256", key).update(`${purpose}\0${code}`).digest("hex");

export function safeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export const sixDigitCode = () => randomInt(0, 1_000_000).toString().padStart(6, "0");

const RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"; // no 0/o, 1/l/i
/** "xxxxx-xxxxx": 10 characters from a 31-letter alphabet ≈ 49 bits, enough for a one-time code. */
export function recoveryCode(): string {
  let s = "";
  for (let i = 0; i < 10; i++) s += RECOVERY_ALPHABET[randomInt(0, RECOVERY_ALPHABET.length)];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
/** People type recovery codes with spaces, capitals or without the dash. */
export const normaliseRecoveryCode = (code: string) => {
  const s = code.toLowerCase().replace(/[^a-z0-9]/g, "");
  return s.length === 10 ? `${s.slice(0, 5)}-${s.slice(5)}` : s;
};
