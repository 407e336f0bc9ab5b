import type { RouteSnapshot } from "../contract/index.ts";

/**
 * Orders a model's routes for one request: lower priority value first; within a priority, a weighted random
 * order (so traffic splits by weight and the rest are the failover sequence).
 */
export function orderRoutes(routes: RouteSnapshot[], random = Math.random): RouteSnapshot[] {
  if (routes.length <= 1) return routes;
  const byPriority = new Map<number, RouteSnapshot[]>();
  for (const r of routes) {
    const list = byPriority.get(r.priority);
    if (list) list.push(r);
    else byPriority.set(r.priority, [r]);
  }
  const out: RouteSnapshot[] = [];
  for (const p of [...byPriority.keys()].sort((a, b) => a - b)) {
    const pool = byPriority.get(p)!.filter((r) => r.weight > 0);
    while (pool.length > 0) {
      const total = pool.reduce((s, r) => s + r.weight, 0);
      let x = random() * total;
      let i = 0;
      for (; i < pool.length - 1; i++) {
        x -= pool[i]!.weight;
        if (x < 0) break;
      }
      out.push(pool.splice(i, 1)[0]!);
    }
  }
  return out;
}
