import { Secret, TOTP } from "otpauth";

// RFC 6238 TOTP with the parameters every authenticator app understands: SHA-1, 6 digits, 30 s.

export const ISSUER = "modelgate";

const totpFor = (secretBase32: string, label = "user") =>
  new TOTP({
    issuer: ISSUER,
    label,
    algorithm: "SHA1",
    digits: 6,
    period: 30,
    secret: Secret.fromBase32(secretBase32),
  });

export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

export const totpUri = (secretBase32: string, email: string): string => totpFor(secretBase32, email).toString();

/** The time step (30 s periods since the epoch) a code belongs to: the current one or one either side (clock drift); null if none. */
export function totpStep(secretBase32: string, code: string, timestamp = Date.now()): number | null {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return null;
  const delta = totpFor(secretBase32).validate({ token, window: 1, timestamp });
  return delta === null ? null : Math.floor(timestamp / 30_000) + delta;
}

/** Accepts the current code and one step either side (clock drift); says nothing about reuse (see checkSecondFactor). */
export const verifyTotp = (secretBase32: string, code: string): boolean => totpStep(secretBase32, code) !== null;
