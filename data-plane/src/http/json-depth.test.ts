import { describe, expect, it } from "vitest";
import { exceededJsonLimit, nestsDeeperThan } from "./json-depth.ts";

const b = (s: string) => Buffer.from(s);

describe("nestsDeeperThan", () => {
  it("counts objects and arrays, not brackets inside strings", () => {
    expect(nestsDeeperThan(b('{"a":[{"b":1}]}'), 3)).toBe(false);
    expect(nestsDeeperThan(b('{"a":[{"b":1}]}'), 2)).toBe(true);
    expect(nestsDeeperThan(b(`{"a":"${"[".repeat(1000)}"}`), 2)).toBe(false);
    expect(nestsDeeperThan(b(`{"a":"\\"${"{".repeat(1000)}"}`), 2)).toBe(false);
  });
  it("refuses 10,000 levels and passes a flat body", () => {
    expect(nestsDeeperThan(b("[".repeat(10_000) + "]".repeat(10_000)), 64)).toBe(true);
    expect(
      nestsDeeperThan(
        b(JSON.stringify({ messages: Array.from({ length: 1000 }, () => ({ role: "user", content: "x" })) })),
        64,
      ),
    ).toBe(false);
  });
});

describe("exceededJsonLimit", () => {
  it("counts objects and arrays against the container limit", () => {
    const many = JSON.stringify({ messages: Array.from({ length: 100 }, () => ({ role: "user", content: "x" })) });
    expect(exceededJsonLimit(b(many), { depth: 64, containers: 102 })).toBeNull();
    expect(exceededJsonLimit(b(many), { depth: 64, containers: 101 })).toBe("containers");
  });
  it("skips escaped quotes and backslashes inside strings", () => {
    expect(exceededJsonLimit(b(`{"a":"x\\\\","b":"{{{{"}`), { depth: 1, containers: 10 })).toBeNull();
    expect(exceededJsonLimit(b(`{"a":"x\\\\\\"{{{{","b":[[]]}`), { depth: 2, containers: 10 })).toBe("depth");
  });
});
