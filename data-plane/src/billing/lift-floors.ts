// The figures a spend counter that fell behind the settled spend may be lifted to (spend-redis.ts).
//
// A counter reads below the settled figure for two reasons. Spend it never got: Redis lost it, the counter
// expired, an add failed while its usage event still settled. The lift repairs that. And spend on its way:
// another replica's costs wait up to its add window for their add (and the script up to its command timeout),
// while their usage events may settle within milliseconds and reach this replica's snapshot first. A lift to
// that figure counts those costs, and then their adds count them again, for good: nothing ever lowers a
// counter. Two replicas did that in the reconciliation test, a few calls' cost per burst, until a key was
// refused below its daily budget. A figure seen `afterMs` ago holds only costs whose adds went (or failed) long
// since, so a lift to it counts nothing twice; what it leaves out is the last `afterMs` of a lost counter's
// spend, lifted by a later add.

/** A settled figure of a counter and when it was first recorded. */
interface Seen {
  micro: bigint;
  seenAt: number;
}

/** The settled figures seen per counter name, oldest first and rising: at most three per counter. */
export class LiftFloors {
  private readonly seen = new Map<string, Seen[]>();

  /** `afterMs`: how long a figure must have been seen before a counter is lifted to it (0: at once). */
  constructor(private readonly afterMs: number) {}

  /**
   * Records `figure` (the settled figure a batch of adds carries, its oldest snapshot's) and answers the figure
   * the counter may be lifted to: the newest one recorded at least afterMs ago, never above `figure` nor above
   * any figure seen since (null: none yet).
   */
  floor(name: string, figure: bigint, now: number): bigint | null {
    if (this.afterMs === 0) return figure;
    let seen = this.seen.get(name);
    if (seen === undefined) this.seen.set(name, (seen = []));
    // Lower than a figure seen before: spend was lowered (a quota reset) or a snapshot of this batch is older;
    // the higher figures are no floor any more.
    while (seen.length > 0 && seen[seen.length - 1]!.micro > figure) seen.pop();
    const last = seen[seen.length - 1];
    // One figure per half delay keeps the list at three or fewer: a figure recorded later than it was first
    // seen only lifts later.
    if (last === undefined || (last.micro < figure && now - last.seenAt >= this.afterMs / 2))
      seen.push({ micro: figure, seenAt: now });
    let ripe = -1;
    for (let i = 0; i < seen.length; i++) if (now - seen[i]!.seenAt >= this.afterMs) ripe = i;
    if (ripe > 0) seen.splice(0, ripe);
    return ripe < 0 ? null : seen[0]!.micro;
  }

  /** Forgets a counter's figures (its cache entry went, or its spend was reset). */
  forget(name: string): void {
    this.seen.delete(name);
  }

  /** figures kept for a counter (tests) */
  kept(name: string): number {
    return this.seen.get(name)?.length ?? 0;
  }
}
