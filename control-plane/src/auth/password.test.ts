import { describe, expect, it } from "vitest";
import { hashPassword, needsRehash, scryptN, verifyPassword } from "./password.ts";
import { LOGIN_POLICY, waitAfter } from "./throttle.ts";

describe("password hashing cost", () => {
  it("is OWASP's minimum for scrypt by default, and only a power of two from 2^14 otherwise", () => {
    expect(scryptN(undefined)).toBe(2 ** 17);
    expect(scryptN("16384")).toBe(16384);
    for (const bad of ["1000", "8192", "131073", "abc", String(2 ** 21)])
      expect(() => scryptN(bad)).toThrow(/MODELGATE_SCRYPT_N/);
  });

  it("asks for a new hash when the stored one was made at a lower cost", async () => {
    const stored = await hashPassword("a-password-123");
    expect(stored.split("$")[1]).toBe(String(scryptN(process.env.MODELGATE_SCRYPT_N)));
    expect(needsRehash(stored)).toBe(false);
    expect(needsRehash(stored.replace(/^scrypt\$\d+\$/, "scrypt$1024$"))).toBe(true);
    expect(await verifyPassword("a-password-123", stored)).toBe(true);
    // a tampered cost is refused without allocating for it
    expect(await verifyPassword("a-password-123", stored.replace(/^scrypt\$\d+\$/, `scrypt$${2 ** 30}$`))).toBe(false);
  });
});

describe("throttle waits", () => {
  it("are free for five attempts, then double from 30 s up to 15 minutes", () => {
    expect([1, 4].map((n) => waitAfter(n, LOGIN_POLICY))).toEqual([0, 0]);
    expect([5, 6, 7].map((n) => waitAfter(n, LOGIN_POLICY))).toEqual([30_000, 60_000, 120_000]);
    expect(waitAfter(50, LOGIN_POLICY)).toBe(15 * 60_000);
  });
});
