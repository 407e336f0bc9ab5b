import type { AccountSnapshot, KeySnapshot, ModelSnapshot, Snapshot } from "../contract/index.ts";
import { emptySnapshot } from "../contract/index.ts";

/**
 * The data plane's only source of truth on the hot path: the last snapshot it was given.
 * If the control plane or Redis goes away the store keeps serving what it has (fail static) and
 * reports its age, so /readyz and metrics can say how stale it is.
 */
export class SnapshotStore {
  private snapshot: Snapshot = emptySnapshot();
  private receivedAt = 0;
  private publishedAt = 0;
  /** when the control plane was last heard from (its heartbeat); null: in the same process (embedded) */
  private controlPlaneAt: number | null = null;
  private readonly listeners = new Set<(s: Snapshot) => void>();

  get current(): Snapshot {
    return this.snapshot;
  }
  get version(): number {
    return this.snapshot.version;
  }
  /** Milliseconds since the last snapshot arrived (Infinity before the first). */
  ageMs(now = Date.now()): number {
    return this.receivedAt === 0 ? Number.POSITIVE_INFINITY : now - this.receivedAt;
  }
  get loaded(): boolean {
    return this.receivedAt !== 0;
  }
  /**
   * Milliseconds since the control plane built the snapshot in use (it republishes at least every
   * MODELGATE_REPUBLISH_MS): unlike ageMs, this keeps growing when the control plane is stopped or frozen.
   */
  publishedAgeMs(now = Date.now()): number {
    return this.publishedAt === 0 ? Number.POSITIVE_INFINITY : now - this.publishedAt;
  }
  /** The control plane's heartbeat was seen (the time it wrote, by its clock; null when none is there). */
  heardControlPlane(at: number | null): void {
    this.controlPlaneAt = at ?? 0;
  }
  /** "in-process" (embedded), "up" (heartbeat under 5 s old), or "silent" (older, expired, or never seen). */
  controlPlane(now = Date.now()): { state: "in-process" | "up" | "silent"; heartbeatAgeMs: number | null } {
    if (this.controlPlaneAt === null) return { state: "in-process", heartbeatAgeMs: null };
    const age = this.controlPlaneAt === 0 ? null : Math.max(0, now - this.controlPlaneAt);
    return { state: age !== null && age < 5_000 ? "up" : "silent", heartbeatAgeMs: age };
  }

  /** Older versions are ignored, so a late or duplicated message can never roll policy back. */
  apply(next: Snapshot): boolean {
    // An older version says nothing about freshness: the age keeps growing until a current one arrives.
    if (this.loaded && next.version < this.snapshot.version) return false;
    this.receivedAt = Date.now();
    const built = Date.parse(next.generatedAt);
    this.publishedAt = Number.isFinite(built) ? built : this.receivedAt;
    this.snapshot = next;
    for (const l of this.listeners) l(next);
    return true;
  }

  /** Marks the current snapshot as confirmed fresh (the source checked and nothing changed). */
  touch(): void {
    if (this.receivedAt !== 0) this.receivedAt = Date.now();
  }

  onChange(listener: (s: Snapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  key(hash: string): KeySnapshot | undefined {
    return this.snapshot.keys[hash];
  }
  account(id: string): AccountSnapshot | undefined {
    return this.snapshot.accounts[id];
  }
  model(id: string): ModelSnapshot | undefined {
    return this.snapshot.models[id];
  }
}
