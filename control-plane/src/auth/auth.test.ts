import type * as Crypto from "node:crypto";
import { timingSafeEqual } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { hashPassword, passwordProblem, verifyPassword } from "./password.ts";
import { parseCookies, serializeSessionCookie } from "./cookies.ts";
import { normaliseRecoveryCode, recoveryCode, safeEqualHex, sha256 } from "./tokens.ts";

// crypto's timingSafeEqual, watched (and still doing the work) so the test sees that comparisons go through it.
vi.mock("node:crypto", async (original) => {
  const actual = await original<typeof Crypto>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

describe("passwords", () => {
  it("hashes with a salt and verifies", async () => {
    const a = await hashPassword("correct horse battery");
    const b = await hashPassword("correct horse battery");
    expect(a).not.toBe(b);
    expect(a.startsWith("scrypt$131072$8$1$")).toBe(true); // OWASP: N = 2^17, r = 8, p = 1
    expect(await verifyPassword("correct horse battery", a)).toBe(true);
    expect(await verifyPassword("correct horse batterY", a)).toBe(false);
    expect(await verifyPassword("x", "garbage")).toBe(false);
  });
  it("refuses short passwords", () => {
    expect(passwordProblem("short")).toMatch(/at least/);
    expect(passwordProblem("long enough password")).toBeNull();
  });
});

describe("cookies", () => {
  it("parses and serialises the session cookie", () => {
    const m = parseCookies("a=1; mg_session=mgs_abc%2F; mg_session=second");
    expect(m.get("mg_session")).toBe("mgs_abc/");
    expect(m.get("a")).toBe("1");
    const c = serializeSessionCookie("v", { secure: true, maxAge: 60 });
    expect(c).toContain("HttpOnly");
    expect(c).toContain("SameSite=Lax");
    expect(c).toContain("Secure");
    expect(serializeSessionCookie("", { secure: false, maxAge: 0 })).not.toContain("Secure");
  });
});

describe("tokens", () => {
  it("makes recovery codes that survive sloppy typing", () => {
    const code = recoveryCode();
    expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    expect(normaliseRecoveryCode(` ${code.toUpperCase().replace("-", " ")} `)).toBe(code);
  });
  it("compares hashes in constant time", () => {
    const spy = vi.mocked(timingSafeEqual);
    spy.mockClear();
    expect(safeEqualHex(sha256("a"), sha256("a"))).toBe(true);
    expect(safeEqualHex(sha256("a"), sha256("b"))).toBe(false);
    // both same-length comparisons went through crypto's constant-time compare, on the decoded 32 bytes
    expect(spy).toHaveBeenCalledTimes(2);
    expect((spy.mock.calls[1]![0] as Buffer).length).toBe(32);
    // lengths differ or nothing to compare: refused without comparing bytes
    expect(safeEqualHex(sha256("a"), sha256("a").slice(0, 62))).toBe(false);
    expect(safeEqualHex("", "")).toBe(false);
    expect(spy).toHaveBeenCalledTimes(2);
  });
});
