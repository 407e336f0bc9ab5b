import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

// Where a customer's webhook may point. The control plane sits inside the operator's network, so a URL a
// customer types must not reach what only it can reach (cloud metadata, Postgres, Redis, the admin endpoint):
// loopback, private, link-local and shared-address ranges are refused unless the operator allows them
// (MODELGATE_WEBHOOK_ALLOW_PRIVATE=1, for on-premises receivers and tests). The operators' own webhooks may
// point anywhere.
//
// The check that counts is the one made on the address actually connected to: the delivery's connection
// resolves the name through `guardedLookup`, which refuses a blocked address before any connection is made.
// Checking a name once and letting the connection resolve it again left a receiver that changes its DNS
// between the two (rebinding) free to reach 127.0.0.1 or 169.254.169.254.

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  // IPv4-compatible (deprecated), SIIT's IPv4-translated form, 6to4 (deprecated), Teredo and local-use NAT64:
  // each carries an IPv4 address a gateway may reach on our behalf, and none is a public receiver's address
  ["::", 96],
  ["::ffff:0:0:0", 96],
  ["2002::", 16],
  ["2001::", 32],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");

export class DestinationRefused extends Error {}

export const privateAllowed = (env: NodeJS.ProcessEnv = process.env) => env.MODELGATE_WEBHOOK_ALLOW_PRIVATE === "1";

/** The 16 bytes of an IPv6 address (a zone, `%eth0`, dropped); null when it is not one. */
function ipv6Bytes(text: string): number[] | null {
  const address = text.replace(/%.*$/, "");
  if (isIP(address) !== 6) return null;
  let groups = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    groups = `${address.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = groups.split("::") as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  const words = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** IPv6 forms that carry an IPv4 address in their last 32 bits and reach it: mapped, and well-known NAT64. */
function embeddedIpv4(bytes: number[]): string | null {
  const prefix = bytes.slice(0, 12);
  const mapped = prefix.every((b, i) => (i < 10 ? b === 0 : b === 0xff));
  const nat64 = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0].every((b, i) => prefix[i] === b);
  return mapped || nat64 ? bytes.slice(12).join(".") : null;
}

/** A customer may not reach this address (IPv4-embedding IPv6 forms are judged by the IPv4 address they carry). */
export function isBlocked(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  const bytes = ipv6Bytes(address);
  if (!bytes) return true;
  const v4 = embeddedIpv4(bytes);
  if (v4 !== null) return blocked.check(v4, "ipv4");
  const canonical = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(
    ":",
  );
  return blocked.check(canonical, "ipv6");
}

/** Resolves a name to every address it has (the system resolver by default; tests inject their own). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;
export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

const refusal = (host: string, address: string) =>
  new DestinationRefused(`${host} is a private or local address (${address}); webhooks go to public addresses`);

/** The URL's host, without an IPv6 literal's brackets. */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, "");

/** Throws DestinationRefused when the URL's host is, or resolves to, an address a customer may not reach. */
export async function checkDestination(url: string, resolve: Resolver = systemResolver): Promise<void> {
  const host = hostOf(url);
  const addresses = isIP(host) ? [host] : (await resolve(host)).map((a) => a.address);
  const bad = addresses.find(isBlocked);
  if (bad !== undefined) throw refusal(host, bad);
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for the delivery's connection (node:net's option): resolves the name and, when `guard`, refuses
 * it if any of its addresses is blocked, so the address connected to is one that was checked, by this very
 * lookup. (Unguarded, for the operators' webhooks, it only routes the resolution through `resolve`.)
 */
export function connectLookup(resolve: Resolver = systemResolver, guard = true) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const bad = guard ? addresses.find((a) => isBlocked(a.address)) : undefined;
        if (bad) return callback(refusal(hostname, bad.address), "");
        if (addresses.length === 0) return callback(new Error(`${hostname} has no address`), "");
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: Error) => callback(err, ""),
    );
  };
}
