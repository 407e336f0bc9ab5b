// CIDR allowlists, compiled once per snapshot and matched per request.
//
// Why not node:net BlockList: it fits functionally (it even matches ::ffff:a.b.c.d against IPv4 subnets), but
// each check() builds a SocketAddress in C++ and costs about 2.5 µs on the reference machine; this parser works
// on the string with integer arithmetic and reused scratch buffers, far faster and allocation-free.

// Reused scratch buffers: matching is synchronous, so no two parses ever interleave.
const groups = new Uint16Array(8);
const words = new Uint32Array(4);

/** Parses dotted-quad IPv4 from s[start, end) into a uint32; -1 when it is not one. */
function parseV4(s: string, start: number, end: number): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      // A leading zero is ambiguous (octal in some stacks): "010.0.0.1" is refused, as Node's isIP does.
      if (digits === 1 && octet === 0) return -1;
      octet = octet * 10 + (c - 48);
      if (octet > 255) return -1;
      digits++;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Parses IPv6 ("::", an IPv4 tail and a %zone allowed) from s[start, end) into `words`; false when invalid. */
function parseV6(s: string, start: number, end: number): boolean {
  const zone = s.indexOf("%", start);
  if (zone !== -1 && zone < end) end = zone;
  if (end - start < 2) return false;
  let count = 0;
  let gap = -1;
  let i = start;
  if (s.charCodeAt(i) === 58 /* : */) {
    if (s.charCodeAt(i + 1) !== 58) return false;
    gap = 0;
    i += 2;
  }
  while (i < end) {
    if (count === 8) return false;
    let value = 0;
    let j = i;
    for (; j < end && j - i < 5; j++) {
      const h = hexValue(s.charCodeAt(j));
      if (h < 0) break;
      value = value * 16 + h;
    }
    const digits = j - i;
    if (j < end && s.charCodeAt(j) === 46 /* . */) {
      // An IPv4 tail fills the last two groups and ends the address.
      if (count > 6) return false;
      const v4 = parseV4(s, i, end);
      if (v4 < 0) return false;
      groups[count++] = v4 >>> 16;
      groups[count++] = v4 & 0xffff;
      i = end;
      break;
    }
    if (digits === 0 || digits > 4) return false;
    groups[count++] = value;
    if (j === end) break;
    if (s.charCodeAt(j) !== 58) return false;
    if (j + 1 < end && s.charCodeAt(j + 1) === 58) {
      if (gap !== -1) return false;
      gap = count;
      i = j + 2;
    } else {
      i = j + 1;
      if (i === end) return false; // a trailing single ":"
    }
  }
  if (gap === -1) {
    if (count !== 8) return false;
  } else {
    if (count > 7) return false;
    // Move the groups after "::" to the end and zero the gap.
    const shift = 8 - count;
    for (let k = count - 1; k >= gap; k--) groups[k + shift] = groups[k]!;
    for (let k = gap; k < gap + shift; k++) groups[k] = 0;
  }
  words[0] = ((groups[0]! << 16) | groups[1]!) >>> 0;
  words[1] = ((groups[2]! << 16) | groups[3]!) >>> 0;
  words[2] = ((groups[4]! << 16) | groups[5]!) >>> 0;
  words[3] = ((groups[6]! << 16) | groups[7]!) >>> 0;
  return true;
}

const NOT_AN_IP = 0;
const IS_V4 = 4;
const IS_V6 = 6;
type Family = typeof NOT_AN_IP | typeof IS_V4 | typeof IS_V6;

// Result of the last classify(): the IPv4 value, or the IPv6 address in `words`.
let lastV4 = 0;

/** Classifies and parses an address. IPv4-mapped IPv6 (::ffff:a.b.c.d, ::ffff:0a01:0203) counts as IPv4. */
function classify(s: string): Family {
  const end = s.length;
  if (s.indexOf(":") === -1) {
    lastV4 = parseV4(s, 0, end);
    return lastV4 < 0 ? NOT_AN_IP : IS_V4;
  }
  if (!parseV6(s, 0, end)) return NOT_AN_IP;
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) {
    lastV4 = words[3]!;
    return IS_V4;
  }
  return IS_V6;
}

/** True when s is an IPv4 or IPv6 address (zones allowed). */
export function isIpAddress(s: string): boolean {
  return classify(s) !== NOT_AN_IP;
}

/**
 * The canonical form used for logs and usage events: IPv4-mapped IPv6 becomes plain IPv4 (dual-stack sockets
 * report "::ffff:1.2.3.4"); other addresses are returned unchanged; null when s is not an address.
 */
export function normalizeIp(s: string): string | null {
  const family = classify(s);
  if (family === NOT_AN_IP) return null;
  if (family === IS_V4 && s.indexOf(":") !== -1) {
    const v = lastV4;
    return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  return s;
}

function maskOf(bits: number): number {
  // bits in [0, 32]; shifting a 32-bit int by 32 is a no-op in JS, hence the special case.
  return bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
}

/** A compiled allowlist. Entries that do not parse are kept in `invalid` and match nothing (fail closed). */
export class IpMatcher {
  /** [network, mask] pairs */
  private readonly v4: Uint32Array;
  /** per entry: four network words then four mask words */
  private readonly v6: Uint32Array;
  readonly size: number;
  readonly invalid: readonly string[];

  constructor(cidrs: readonly string[]) {
    const v4: number[] = [];
    const v6: number[] = [];
    const invalid: string[] = [];
    for (const raw of cidrs) {
      const entry = raw.trim();
      const slash = entry.indexOf("/");
      const addr = slash === -1 ? entry : entry.slice(0, slash);
      const family = classify(addr);
      if (family === NOT_AN_IP || (slash !== -1 && !/^\d{1,3}$/.test(entry.slice(slash + 1)))) {
        invalid.push(raw);
        continue;
      }
      const mapped = family === IS_V4 && addr.indexOf(":") !== -1;
      const max = family === IS_V4 ? 32 : 128;
      let bits = slash === -1 ? max : Number(entry.slice(slash + 1));
      // ::ffff:10.0.0.0/104 is written in IPv6 bits; it covers the IPv4 /8.
      if (mapped && slash !== -1) bits -= 96;
      if (bits < 0 || bits > max) {
        invalid.push(raw);
        continue;
      }
      if (family === IS_V4) {
        const mask = maskOf(bits);
        v4.push((lastV4 & mask) >>> 0, mask);
      } else {
        const masks = [maskOf(bits), maskOf(bits - 32), maskOf(bits - 64), maskOf(bits - 96)];
        v6.push(
          (words[0]! & masks[0]!) >>> 0,
          (words[1]! & masks[1]!) >>> 0,
          (words[2]! & masks[2]!) >>> 0,
          (words[3]! & masks[3]!) >>> 0,
          ...masks,
        );
      }
    }
    this.v4 = Uint32Array.from(v4);
    this.v6 = Uint32Array.from(v6);
    this.size = v4.length / 2 + v6.length / 8;
    this.invalid = invalid;
  }

  /** True when ip falls in any entry. Not an address: false. */
  matches(ip: string): boolean {
    const family = classify(ip);
    if (family === IS_V4) {
      const list = this.v4;
      const v = lastV4;
      for (let i = 0; i < list.length; i += 2) {
        if ((v & list[i + 1]!) >>> 0 === list[i]) return true;
      }
      return false;
    }
    if (family === IS_V6) {
      const list = this.v6;
      const w0 = words[0]!,
        w1 = words[1]!,
        w2 = words[2]!,
        w3 = words[3]!;
      for (let i = 0; i < list.length; i += 8) {
        if (
          (w0 & list[i + 4]!) >>> 0 === list[i] &&
          (w1 & list[i + 5]!) >>> 0 === list[i + 1] &&
          (w2 & list[i + 6]!) >>> 0 === list[i + 2] &&
          (w3 & list[i + 7]!) >>> 0 === list[i + 3]
        ) {
          return true;
        }
      }
      return false;
    }
    return false;
  }
}

/** Compiles an allowlist; an empty list compiles to null, meaning "no restriction". */
export function compileAllowlist(cidrs: readonly string[]): IpMatcher | null {
  return cidrs.length === 0 ? null : new IpMatcher(cidrs);
}
