import { describe, expect, it } from "vitest";
import { hashPassword, passwordProblem, verifyPassword } from "./password.ts";
import { parseCookies, serializeSessionCookie } from "./cookies.ts";
import { normaliseRecoveryCode, recoveryCode, safeEqualHex, sha256 } from "./tokens.ts";

describe("passwords", () => {
  it("hashes with a salt and verifies", async () => {
    const a = await hashPassword("correct horse battery");
    const b = await hashPassword("correct horse battery");
    expect(a).not.toBe(b);
    expect(a.startsWith("scrypt$16384$8$1$")).toBe(true);
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
    expect(safeEqualHex(sha256("a"), sha256("a"))).toBe(true);
    expect(safeEqualHex(sha256("a"), sha256("b"))).toBe(false);
    expect(safeEqualHex("", "")).toBe(false);
  });
});
