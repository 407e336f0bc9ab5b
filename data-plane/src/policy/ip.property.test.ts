import { BlockList } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IpMatcher } from "./ip.ts";

// The hand-written CIDR matcher (ip.ts) is chosen over node:net's BlockList for speed only: on any subnet and any
// address, the two must agree. Addresses are drawn both anywhere and inside the subnet (host bits random), so
// both answers are exercised; IPv4-mapped IPv6 addresses are checked against IPv4 subnets too.
//
// One deliberate difference: an IPv6 subnet covers IPv6 clients only. BlockList also matches an IPv4 client
// (1.2.3.4, or ::ffff:1.2.3.4 from a dual-stack socket) against an IPv6 subnet that contains ::ffff:1.2.3.4,
// such as ::/0; the allowlist does not (an operator who allows "::/0" allows IPv6, not every client), and an
// IPv4-mapped subnet shorter than /96 is refused as invalid. So the IPv6 property leaves IPv4-mapped
// addresses and subnets out, and the last test pins the difference.

const v4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const v6Text = (n: bigint) =>
  Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(":");
const mask4 = (bits: number) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);
const mask6 = (bits: number) => (bits === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - bits)) - 1n));

/** ::ffff:a.b.c.d: the top 80 bits zero, the next 16 all ones */
const isMapped = (n: bigint) => n >> 32n === 0xffffn;

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u128 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });

describe("IpMatcher agrees with net.BlockList", () => {
  it("IPv4 subnets, IPv4 and IPv4-mapped addresses", () => {
    fc.assert(
      fc.property(
        u32,
        fc.integer({ min: 0, max: 32 }),
        u32,
        fc.boolean(),
        fc.boolean(),
        (net, bits, host, inside, mapped) => {
          const m = mask4(bits);
          const addr = inside ? ((net & m) | (host & ~m)) >>> 0 : host;
          const subnet = `${v4Text(net)}/${bits}`;
          const list = new BlockList();
          list.addSubnet(v4Text(net), bits, "ipv4");
          const text = mapped ? `::ffff:${v4Text(addr)}` : v4Text(addr);
          const expected = list.check(text, mapped ? "ipv6" : "ipv4");
          expect(new IpMatcher([subnet]).matches(text), `${text} in ${subnet}`).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("IPv6 subnets and IPv6 addresses", () => {
    fc.assert(
      fc.property(u128, fc.integer({ min: 0, max: 128 }), u128, fc.boolean(), (net, bits, host, inside) => {
        const m = mask6(bits);
        const addr = inside ? (net & m) | (host & ~m & ((1n << 128n) - 1n)) : host;
        fc.pre(!isMapped(addr) && !isMapped(net));
        const list = new BlockList();
        list.addSubnet(v6Text(net), bits, "ipv6");
        const subnet = `${v6Text(net)}/${bits}`;
        expect(new IpMatcher([subnet]).matches(v6Text(addr)), `${v6Text(addr)} in ${subnet}`).toBe(
          list.check(v6Text(addr), "ipv6"),
        );
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

  it("an IPv6 subnet never admits an IPv4 client, plain or IPv4-mapped, where BlockList would", () => {
    for (const [subnet, addr] of [
      ["::/0", "::ffff:1.2.3.4"],
      ["::/0", "1.2.3.4"],
      ["::/80", "::ffff:0:1"],
    ] as const) {
      const [net, bits] = subnet.split("/") as [string, string];
      const list = new BlockList();
      list.addSubnet(net, Number(bits), "ipv6");
      expect(list.check(addr, addr.includes(":") ? "ipv6" : "ipv4"), `BlockList: ${addr} in ${subnet}`).toBe(true);
      expect(new IpMatcher([subnet]).matches(addr), `${addr} in ${subnet}`).toBe(false);
    }
    expect(new IpMatcher(["::ffff:0:0/80"]).invalid).toEqual(["::ffff:0:0/80"]);
  });
});
