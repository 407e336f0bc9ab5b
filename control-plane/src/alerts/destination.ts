import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

// Where a customer's webhook may point. The control plane sits inside the operator's network, so a URL a
// customer types must not reach what only it can reach (cloud metadata, Postgres, Redis, the admin endpoint):
// loopback, private, link-local and shared-address ranges are refused unless the operator allows them
// (MODELGATE_WEBHOOK_ALLOW_PRIVATE=1, for on-premises receivers and tests). The operators' own webhooks may
// point anywhere. The name is resolved before each attempt; the fetch resolves it again, so a receiver that
// changes its DNS between the two (rebinding) is a remaining window, narrowed but not closed.

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
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
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");

export class DestinationRefused extends Error {}

export const privateAllowed = (env: NodeJS.ProcessEnv = process.env) => env.MODELGATE_WEBHOOK_ALLOW_PRIVATE === "1";

function isBlocked(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family === 6) {
    // an IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    return mapped ? blocked.check(mapped[1]!, "ipv4") : blocked.check(address, "ipv6");
  }
  return true;
}

/** Throws DestinationRefused when the URL's host is, or resolves to, an address a customer may not reach. */
export async function checkDestination(url: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  const bad = addresses.find(isBlocked);
  if (bad !== undefined)
    throw new DestinationRefused(`${host} is a private or local address (${bad}); webhooks go to public addresses`);
}
