import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { open, parseMasterKey, seal } from "./secret-box.ts";

describe("secret-box", () => {
  const key = randomBytes(32);
  it("round-trips and never repeats a ciphertext", () => {
    const a = seal(key, "sk-upstream-secret");
    const b = seal(key, "sk-upstream-secret");
    expect(a).not.toBe(b);
    expect(a).not.toContain("sk-upstream-secret");
    expect(open(key, a)).toBe("sk-upstream-secret");
  });
  it("refuses a tampered value or the wrong key", () => {
    const s = seal(key, "secret");
    const [iv, tag, data] = s.split(".");
    const flipped = Buffer.from(data!, "base64");
    flipped[0] = flipped[0]! ^ 1;
    expect(() => open(key, `${iv}.${tag}.${flipped.toString("base64")}`)).toThrow();
    expect(() => open(randomBytes(32), s)).toThrow();
  });
  it("parses hex and base64 master keys of 32 bytes only", () => {
    expect(parseMasterKey("ab".repeat(32)).length).toBe(32);
    expect(parseMasterKey(randomBytes(32).toString("base64")).length).toBe(32);
    expect(() => parseMasterKey("abcd")).toThrow(/32 bytes/);
  });
});
