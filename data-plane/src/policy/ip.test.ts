import { describe, expect, it } from "vitest";
import { compileAllowlist, IpMatcher, isIpAddress, normalizeIp } from "./ip.ts";
import { resolveClientIp } from "./client-ip.ts";

describe("IpMatcher", () => {
  const m = new IpMatcher(["10.0.0.0/8", "192.168.1.5", "172.16.0.0/12", "2001:db8::/32", "::1", "fe80::/10"]);

  it.each([
    ["10.0.0.0", true],
    ["10.255.255.255", true],
    ["11.0.0.0", false],
    ["9.255.255.255", false],
    ["192.168.1.5", true],
    ["192.168.1.4", false],
    ["172.31.255.255", true],
    ["172.32.0.0", false],
    ["::ffff:10.1.2.3", true],
    ["::FFFF:10.1.2.3", true],
    ["::ffff:0a01:0203", true],
    ["::ffff:11.1.2.3", false],
    ["2001:db8::1", true],
    ["2001:0db8:ffff:ffff:ffff:ffff:ffff:ffff", true],
    ["2001:db9::", false],
    ["::1", true],
    ["::2", false],
    ["0:0:0:0:0:0:0:1", true],
    ["fe80::1%eth0", true],
    ["febf:ffff::", true],
    ["fec0::", false],
    ["not an ip", false],
    ["", false],
    ["10.0.0", false],
    ["10.0.0.256", false],
    ["010.0.0.1", false],
    ["1:2:3:4:5:6:7:8:9", false],
    ["1::2::3", false],
    ["2001:db8:::1", false],
    ["2001:db8::1:", false],
    ["12345::", false],
  ])("%s → %s", (ip, expected) => {
    expect(m.matches(ip)).toBe(expected);
  });

  it("treats a bare address as /32 or /128 and /0 as everything in its family", () => {
    const any4 = new IpMatcher(["0.0.0.0/0"]);
    expect(any4.matches("203.0.113.9")).toBe(true);
    expect(any4.matches("::ffff:203.0.113.9")).toBe(true);
    expect(any4.matches("2001:db8::1")).toBe(false);
    const any6 = new IpMatcher(["::/0"]);
    expect(any6.matches("2001:db8::1")).toBe(true);
    expect(any6.matches("203.0.113.9")).toBe(false);
    const one6 = new IpMatcher(["2001:db8::7"]);
    expect(one6.matches("2001:db8::7")).toBe(true);
    expect(one6.matches("2001:db8::6")).toBe(false);
  });

  it("matches prefixes that are not multiples of 8 or 32", () => {
    const m6 = new IpMatcher(["2001:db8:8000::/33", "100.64.0.0/10"]);
    expect(m6.matches("2001:db8:8000::1")).toBe(true);
    expect(m6.matches("2001:db8:7fff::1")).toBe(false);
    expect(m6.matches("100.127.255.255")).toBe(true);
    expect(m6.matches("100.128.0.0")).toBe(false);
  });

  it("accepts an IPv4-mapped CIDR written in IPv6 bits", () => {
    const mapped = new IpMatcher(["::ffff:10.0.0.0/104"]);
    expect(mapped.matches("10.9.9.9")).toBe(true);
    expect(mapped.matches("11.0.0.0")).toBe(false);
  });

  it("keeps invalid entries aside and fails closed on them", () => {
    const bad = new IpMatcher(["10.0.0.0/33", "garbage", "1.2.3.4/x", "2001:db8::/129", " 10.0.0.1 "]);
    expect(bad.invalid).toEqual(["10.0.0.0/33", "garbage", "1.2.3.4/x", "2001:db8::/129"]);
    expect(bad.size).toBe(1);
    expect(bad.matches("10.0.0.1")).toBe(true);
    expect(bad.matches("10.0.0.2")).toBe(false);
  });

  it("compiles an empty allowlist to null (no restriction)", () => {
    expect(compileAllowlist([])).toBeNull();
    expect(compileAllowlist(["1.2.3.4"])?.matches("1.2.3.4")).toBe(true);
  });

  it("normalises IPv4-mapped addresses and validates", () => {
    expect(normalizeIp("::ffff:1.2.3.4")).toBe("1.2.3.4");
    expect(normalizeIp("::ffff:0102:0304")).toBe("1.2.3.4");
    expect(normalizeIp("2001:db8::1")).toBe("2001:db8::1");
    expect(normalizeIp("1.2.3.4")).toBe("1.2.3.4");
    expect(normalizeIp("x")).toBeNull();
    expect(isIpAddress("::")).toBe(true);
    expect(isIpAddress("1.2.3")).toBe(false);
  });
});

describe("resolveClientIp", () => {
  const trusted = new IpMatcher(["10.0.0.0/8", "fd00::/8"]);

  it("uses the socket peer when it is not a trusted proxy, whatever X-Forwarded-For says", () => {
    expect(resolveClientIp("203.0.113.7", "1.1.1.1", trusted)).toBe("203.0.113.7");
    expect(resolveClientIp("::ffff:203.0.113.7", "1.1.1.1", trusted)).toBe("203.0.113.7");
    expect(resolveClientIp("10.0.0.1", "1.1.1.1", null)).toBe("10.0.0.1");
  });

  it("uses the peer when a trusted proxy sent no header", () => {
    expect(resolveClientIp("10.0.0.1", undefined, trusted)).toBe("10.0.0.1");
  });

  it("walks from the right, skipping trusted hops", () => {
    expect(resolveClientIp("10.0.0.1", "6.6.6.6, 198.51.100.2, 10.1.1.1", trusted)).toBe("198.51.100.2");
    expect(resolveClientIp("::ffff:10.0.0.1", "198.51.100.2", trusted)).toBe("198.51.100.2");
    expect(resolveClientIp("fd00::1", "2001:db8::5,fd00::2", trusted)).toBe("2001:db8::5");
  });

  it("joins repeated headers in order", () => {
    expect(resolveClientIp("10.0.0.1", ["198.51.100.2", "10.2.2.2"], trusted)).toBe("198.51.100.2");
  });

  it("strips ports and blanks, skips empty hops", () => {
    expect(resolveClientIp("10.0.0.1", " 198.51.100.2:5555 ,, ", trusted)).toBe("198.51.100.2");
    expect(resolveClientIp("10.0.0.1", "[2001:db8::9]:443", trusted)).toBe("2001:db8::9");
  });

  it("returns the leftmost hop when every hop is trusted", () => {
    expect(resolveClientIp("10.0.0.1", "10.3.3.3, 10.2.2.2", trusted)).toBe("10.3.3.3");
    expect(resolveClientIp("10.0.0.1", "", trusted)).toBe("10.0.0.1");
  });

  it("fails closed (null) when a trusted proxy forwarded a hop that is not an address", () => {
    expect(resolveClientIp("10.0.0.1", "198.51.100.2, unknown", trusted)).toBeNull();
    expect(resolveClientIp(undefined, undefined, trusted)).toBeNull();
  });
});
