import { describe, expect, it } from "vitest";
import type { RouteSnapshot } from "../contract/index.ts";
import { orderRoutes } from "./pick-route.ts";

const route = (upstream: string, weight: number, priority = 0): RouteSnapshot => ({
  upstream,
  protocol: "openai",
  baseUrl: "http://x/v1",
  apiKeyEnc: null,
  upstreamModel: "m",
  weight,
  priority,
  connectTimeoutMs: 1,
  firstByteTimeoutMs: 1,
  idleTimeoutMs: 1,
});

describe("orderRoutes", () => {
  it("splits traffic by weight", () => {
    const routes = [route("a", 3), route("b", 1)];
    let seed = 0;
    const rnd = () => (seed = (seed * 9301 + 49297) % 233280) / 233280;
    const firsts = { a: 0, b: 0 } as Record<string, number>;
    for (let i = 0; i < 4000; i++) firsts[orderRoutes(routes, null, rnd)[0]!.upstream]!++;
    expect(firsts.a! / 4000).toBeGreaterThan(0.7);
    expect(firsts.a! / 4000).toBeLessThan(0.8);
  });
  it("puts lower priority values first and drops zero-weight routes", () => {
    const order = orderRoutes([route("backup", 5, 1), route("main", 1, 0), route("off", 0, 0)], null, () => 0.99);
    expect(order.map((r) => r.upstream)).toEqual(["main", "backup"]);
  });
});

describe("orderRoutes with an affinity (weighted rendezvous hashing)", () => {
  const three = [route("a", 1), route("b", 1), route("c", 1)];
  const names = (rs: RouteSnapshot[]) => rs.map((r) => r.upstream);

  it("gives one conversation the same order every time, whatever the list's order", () => {
    const first = names(orderRoutes(three, "h:conversation-1"));
    for (let i = 0; i < 20; i++) expect(names(orderRoutes([...three].reverse(), "h:conversation-1"))).toEqual(first);
    expect([...first].sort()).toEqual(["a", "b", "c"]);
  });

  it("spreads different conversations by weight", () => {
    const routes = [route("a", 2), route("b", 1), route("c", 1)];
    const firsts: Record<string, number> = { a: 0, b: 0, c: 0 };
    const n = 8000;
    for (let i = 0; i < n; i++) firsts[orderRoutes(routes, `h:${i}`)[0]!.upstream]!++;
    expect(firsts.a! / n).toBeGreaterThan(0.46);
    expect(firsts.a! / n).toBeLessThan(0.54);
    expect(firsts.b! / n).toBeGreaterThan(0.21);
    expect(firsts.c! / n).toBeGreaterThan(0.21);
  });

  it("moves only the conversations of a route that leaves", () => {
    const n = 3000;
    let moved = 0;
    let onC = 0;
    for (let i = 0; i < n; i++) {
      const before = orderRoutes(three, `k:${i}`);
      const after = orderRoutes(
        three.filter((r) => r.upstream !== "c"),
        `k:${i}`,
      );
      if (before[0]!.upstream === "c") {
        onC++;
        // its next choice is the one it had as second
        expect(after[0]!.upstream).toBe(before[1]!.upstream);
      } else if (after[0]!.upstream !== before[0]!.upstream) moved++;
    }
    expect(moved).toBe(0);
    expect(onC / n).toBeGreaterThan(0.28);
    expect(onC / n).toBeLessThan(0.39);
  });

  it("keeps priorities and zero weights as without one", () => {
    const order = orderRoutes([route("backup", 5, 1), route("main", 1, 0), route("off", 0, 0)], "h:x");
    expect(names(order)).toEqual(["main", "backup"]);
  });
});
