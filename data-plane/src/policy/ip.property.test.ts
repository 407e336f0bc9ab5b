import { BlockList } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IpMatcher } from "./ip.ts";

// The hand-written CIDR matcher (ip.ts) is chosen over node:net's BlockList for speed only: on any subnet and any
// address, the two must agree. Addresses are drawn both anywhere and inside the subnet (host bits random), so
// both answers are exercised; IPv4-mapped IPv6 addresses are checked against IPv4 subnets too.

const v4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const v6Text = (n: bigint) => Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(":");
const mask4 = (bits: number) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);
const mask6 = (bits: number) => (bits === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - bits)) - 1n));

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u128 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });

describe("IpMatcher agrees with net.BlockList", () => {
  it("IPv4 subnets, IPv4 and IPv4-mapped addresses", () => {
    fc.assert(
      fc.property(u32, fc.integer({ min: 0, max: 32 }), u32, fc.boolean(), fc.boolean(), (net, bits, host, inside, mapped) => {
        const m = mask4(bits);
        const addr = inside ? ((net & m) | (host & ~m)) >>> 0 : host;
        const subnet = `${v4Text(net)}/${bits}`;
        const list = new BlockList();
        list.addSubnet(v4Text(net), bits, "ipv4");
        const text = mapped ? `::ffff:${v4Text(addr)}` : v4Text(addr);
        const expected = list.check(text, mapped ? "ipv6" : "ipv4");
        expect(new IpMatcher([subnet]).matches(text), `${text} in ${subnet}`).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("IPv6 subnets and IPv6 addresses", () => {
    fc.assert(
      fc.property(u128, fc.integer({ min: 0, max: 128 }), u128, fc.boolean(), (net, bits, host, inside) => {
        const m = mask6(bits);
        const addr = inside ? (net & m) | (host & ~m & ((1n << 128n) - 1n)) : host;
        const list = new BlockList();
        list.addSubnet(v6Text(net), bits, "ipv6");
        const subnet = `${v6Text(net)}/${bits}`;
        expect(new IpMatcher([subnet]).matches(v6Text(addr)), `${v6Text(addr)} in ${subnet}`).toBe(list.check(v6Text(addr), "ipv6"));
      }),
      { numRuns: 2000 },
    );
  });

  it("an IPv4 address never matches an IPv6-only subnet and the other way round, as BlockList says", () => {
    fc.assert(
      fc.property(u32, u128, fc.integer({ min: 0, max: 32 }), (v4, v6, bits) => {
        const list = new BlockList();
        list.addSubnet(v4Text(v4), bits, "ipv4");
        const v6Addr = v6Text(v6 | (1n << 127n)); // never IPv4-mapped
        expect(new IpMatcher([`${v4Text(v4)}/${bits}`]).matches(v6Addr)).toBe(list.check(v6Addr, "ipv6"));
      }),
      { numRuns: 500 },
    );
  });
});
