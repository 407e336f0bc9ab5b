import { normalizeIp, type IpMatcher } from "./ip.ts";

// Strips a port some proxies append ("1.2.3.4:5678", "[2001:db8::1]:443") and surrounding blanks.
function hopAddress(xff: string, start: number, end: number): string {
  while (start < end && (xff.charCodeAt(start) === 32 || xff.charCodeAt(start) === 9)) start++;
  while (end > start && (xff.charCodeAt(end - 1) === 32 || xff.charCodeAt(end - 1) === 9)) end--;
  if (xff.charCodeAt(start) === 91 /* [ */) {
    const close = xff.indexOf("]", start);
    if (close !== -1 && close < end) return xff.slice(start + 1, close);
  }
  const colon = xff.indexOf(":", start);
  // Exactly one colon within the hop: IPv4 with a port (IPv6 has at least two).
  if (colon !== -1 && colon < end) {
    const second = xff.indexOf(":", colon + 1);
    if (second === -1 || second >= end) return xff.slice(start, colon);
  }
  return xff.slice(start, end);
}

/**
 * The client address for policy and usage: the socket peer, unless the peer is a trusted proxy, in which case
 * X-Forwarded-For is walked from the right, skipping trusted hops, and the first untrusted hop is the client.
 * Only hops appended by trusted proxies are believed; anything left of the first untrusted hop may be forged.
 *
 * Returns null when the peer is unknown, or when a trusted proxy forwarded a hop that is not an address: the
 * client is then unknown, so an IP allowlist fails closed instead of matching the proxy's own address.
 * When every hop is trusted, the leftmost one is the client (an internal caller behind the proxies).
 * IPv4-mapped IPv6 is normalised to plain IPv4.
 */
export function resolveClientIp(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedProxies: IpMatcher | null,
): string | null {
  if (socketAddress === undefined) return null;
  const peer = normalizeIp(socketAddress);
  if (peer === null) return null;
  if (trustedProxies === null || forwardedFor === undefined || !trustedProxies.matches(peer)) return peer;
  const xff = typeof forwardedFor === "string" ? forwardedFor : forwardedFor.join(",");
  let client = peer;
  let end = xff.length;
  while (end > 0) {
    const comma = xff.lastIndexOf(",", end - 1);
    const hop = hopAddress(xff, comma + 1, end);
    end = comma === -1 ? 0 : comma;
    if (hop.length === 0) continue; // "a,,b" or a trailing comma: no hop there
    const address = normalizeIp(hop);
    if (address === null) return null;
    client = address;
    if (!trustedProxies.matches(address)) return address;
  }
  return client;
}
