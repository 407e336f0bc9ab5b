// Which key of a route's pool a call uses. Without affinity: weighted random over the usable keys, each
// weight scaled by what the provider says is left of the key's rate limit (a nearly exhausted key is chosen
// less). With affinity (one conversation): weighted rendezvous hashing, so the same conversation lands on the
// same key while it is usable, and a key leaving moves only the conversations that were on it.

import type { RouteKey } from "../../contract/index.ts";

/** 32-bit FNV-1a of `a` then `b`, mixed (murmur3's finaliser) so close inputs spread over the whole range. */
function hash(a: string, b: string): number {
  let h = 2166136261;
  for (let i = 0; i < a.length; i++) h = Math.imul(h ^ a.charCodeAt(i), 16777619);
  h = Math.imul(h ^ 0x1f, 16777619);
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b.charCodeAt(i), 16777619);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The key to use among `keys` for which `usable(key)` holds, or null when none is. `weightOf` is the key's
 * weight as it stands now (the configured one scaled by its rate-limit headroom); keys of weight 0 are used
 * only when nothing else is usable.
 */
export function chooseKey(
  keys: readonly RouteKey[],
  usable: (key: RouteKey) => boolean,
  weightOf: (key: RouteKey) => number,
  affinity: string | null,
  random: () => number = Math.random,
): RouteKey | null {
  if (affinity !== null) {
    // Highest score wins: -w / ln(u) with u the key's hash of the conversation in (0, 1) (weighted rendezvous).
    let best: RouteKey | null = null;
    let bestScore = -Infinity;
    for (const k of keys) {
      if (!usable(k)) continue;
      const w = Math.max(weightOf(k), 1e-6);
      const u = (hash(affinity, k.id) + 0.5) / 4294967296;
      const score = -w / Math.log(u);
      if (score > bestScore) {
        bestScore = score;
        best = k;
      }
    }
    return best;
  }
  let total = 0;
  let fallback: RouteKey | null = null;
  for (const k of keys) {
    if (!usable(k)) continue;
    fallback ??= k;
    total += weightOf(k);
  }
  if (total <= 0) return fallback;
  let x = random() * total;
  let last: RouteKey | null = null;
  for (const k of keys) {
    if (!usable(k)) continue;
    const w = weightOf(k);
    if (w <= 0) continue;
    last = k;
    x -= w;
    if (x < 0) return k;
  }
  return last;
}
