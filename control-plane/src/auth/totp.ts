import { Secret, TOTP } from "otpauth";

// RFC 6238 TOTP with the parameters every authenticator app understands: SHA-1, 6 digits, 30 s.

export const ISSUER = "modelgate";

const totpFor = (secretBase32: string, label = "user") =>
  new TOTP({ issuer: ISSUER, label, algorithm: "SHA1", digits: 6, period: 30, secret: Secret.fromBase32(secretBase32) });

export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

export const totpUri = (secretBase32: string, email: string): string => totpFor(secretBase32, email).toString();

/** Accepts the current code and one step either side (clock drift). */
export function verifyTotp(secretBase32: string, code: string): boolean {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return false;
  return totpFor(secretBase32).validate({ token, window: 1 }) !== null;
}

export const currentTotp = (secretBase32: string, timestamp = Date.now()) => totpFor(secretBase32).generate({ timestamp });
