import { createHmac, timingSafeEqual } from "node:crypto";

// Webhook signatures: HMAC-SHA256 with the webhook's secret over "<timestamp>.<body>", sent as
//   x-modelgate-timestamp: <unix seconds>
//   x-modelgate-signature: v1=<hex>
// The receiver recomputes it over the raw body and refuses an old timestamp (say, more than 5 minutes), so a
// captured delivery cannot be replayed later.

export const SIGNATURE_HEADER = "x-modelgate-signature";
export const TIMESTAMP_HEADER = "x-modelgate-timestamp";

export function sign(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** For receivers (and tests): whether the signature matches and the timestamp is within toleranceS of now. */
export function verify(
  secret: string,
  timestamp: string,
  body: string,
  signature: string,
  nowS = Math.floor(Date.now() / 1000),
  toleranceS = 300,
): boolean {
  const t = Number(timestamp);
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS) return false;
  const expected = Buffer.from(sign(secret, t, body));
  const got = Buffer.from(signature);
  return expected.length === got.length && timingSafeEqual(expected, got);
}
