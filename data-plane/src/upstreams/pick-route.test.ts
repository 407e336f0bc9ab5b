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
    for (let i = 0; i < 4000; i++) firsts[orderRoutes(routes, rnd)[0]!.upstream]!++;
    expect(firsts.a! / 4000).toBeGreaterThan(0.7);
    expect(firsts.a! / 4000).toBeLessThan(0.8);
  });
  it("puts lower priority values first and drops zero-weight routes", () => {
    const order = orderRoutes([route("backup", 5, 1), route("main", 1, 0), route("off", 0, 0)], () => 0.99);
    expect(order.map((r) => r.upstream)).toEqual(["main", "backup"]);
  });
});
