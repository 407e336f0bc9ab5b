import { wholeNumberEnv } from "@modelgate/data-plane";

// When an epoch's tombstones are compacted (SnapshotPublisher.compact): a deleted key or account leaves a
// tombstone `{"v":<version>}` in its shard for the rest of the epoch (it keeps an older version written late by
// a slow control plane out), and every replica remembers the deletion until its next full load; only a new
// epoch drops both. With key churn they would grow without bound, so an epoch is published again in full once
// the head counts more than max(MODELGATE_POLICY_COMPACT_TOMBSTONES, a quarter of the entities the epoch's full
// publication wrote) tombstones. Embedded mode likewise (memory-bus.ts): there the in-process store remembers each
// deletion until a full load, and a new in-process epoch is one.
//
// Why these figures: a tombstone costs Redis about 100 bytes (a 64-character id, a small value, the hash entry)
// and each replica one remembered change, so 10,000 of them are about a megabyte a copy, not worth a full
// publication (and a full load on every replica) on a small gateway. Past that, a quarter of the entities keeps
// the tombstones at most about a quarter of the feed's entries (a tombstone is a quarter of a key's ~360 bytes:
// some 6% of its memory) while a compaction, which writes every entity once and makes every replica load once
// (paced), comes at most once per entities/4 deletions: about four entity writes per deletion, whatever the
// churn. At a million keys that is one full publication (~21 s) per 250,000 deletions.

/** MODELGATE_POLICY_COMPACT_TOMBSTONES's default: the fewest tombstones worth a new epoch. */
export const COMPACT_TOMBSTONES = 10_000;

/** The share of an epoch's entities its tombstones may reach before it is compacted, if more than the floor. */
export const COMPACT_SHARE = 0.25;

/** The tombstones an epoch may hold; null when compaction is off (a floor of 0). */
export function compactionThreshold(entities: number, floor: number, share = COMPACT_SHARE): number | null {
  if (floor <= 0) return null;
  return Math.max(floor, Math.floor(entities * share));
}

/** MODELGATE_POLICY_COMPACT_TOMBSTONES: a whole number of tombstones; 0 turns compaction off. */
export function compactTombstones(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumberEnv(env, "MODELGATE_POLICY_COMPACT_TOMBSTONES", COMPACT_TOMBSTONES, {
    unit: "tombstones",
    note: "0: never compact",
  });
}
