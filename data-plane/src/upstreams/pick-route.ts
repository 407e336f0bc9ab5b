import type { RouteSnapshot } from "../contract/index.ts";

/**
 * Orders a model's routes for one request: lower priority value first; within a priority, a weighted order
 * (traffic splits by weight, and the rest are the failover sequence).
 *
 * With an affinity (one conversation's mark, upstreams/affinity.ts) the order within a priority is weighted
 * rendezvous hashing: each route scores hash(affinity, route) scaled by its weight, highest first. Calls of one
 * conversation therefore go to the same route (where the provider's prompt cache holds its prefix), different
 * conversations spread by weight, and a route that fails (its breaker open, callUpstream skips it) hands only its
 * own conversations to their next choice: the others keep theirs. Without one, a weighted random order.
 */
export function orderRoutes(
  routes: RouteSnapshot[],
  affinity: string | null = null,
  random = Math.random,
): RouteSnapshot[] {
  if (routes.length <= 1) return routes;
  const byPriority = new Map<number, RouteSnapshot[]>();
  for (const r of routes) {
    const list = byPriority.get(r.priority);
    if (list) list.push(r);
    else byPriority.set(r.priority, [r]);
  }
  const seed = affinity === null ? 0 : hashString(affinity);
  const out: RouteSnapshot[] = [];
  for (const p of [...byPriority.keys()].sort((a, b) => a - b)) {
    const pool = byPriority.get(p)!.filter((r) => r.weight > 0);
    if (affinity !== null) {
      const scored = pool.map((r) => ({ r, s: rendezvousScore(seed, routeId(r), r.weight) }));
      scored.sort((a, b) => b.s - a.s);
      for (const x of scored) out.push(x.r);
      continue;
    }
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

/** A route's name for hashing: stable across snapshots (not its position in the list). */
const routeId = (r: RouteSnapshot): string => `${r.upstream}\u0000${r.upstreamModel}`;

/**
 * Weighted rendezvous (highest-random-weight) score of one candidate for one affinity: -weight / ln(u), u the
 * candidate's uniform hash in (0, 1). The highest score wins; each candidate wins a share of affinities equal to
 * its share of the weight, and removing one moves only the affinities it won.
 */
export function rendezvousScore(affinityHash: number, id: string, weight: number): number {
  const h = mix32(affinityHash ^ Math.imul(hashString(id), 0x9e3779b1));
  const u = (h + 0.5) / 4294967296;
  return -weight / Math.log(u);
}

/** FNV-1a over UTF-16 code units: a 32-bit hash of a short string. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's finaliser: every input bit moves every output bit (FNV alone clusters on similar ids). */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
