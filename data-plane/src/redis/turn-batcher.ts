import { atTurnEnd, atWindowEnd } from "./write-batch.ts";

// Collects what the calls of one event-loop turn want from Redis, by group (an account's hash tag, a spend
// counter), and sends each group once at the end of the turn (see write-batch.ts): a turn that handled
// twenty calls sends one command per group instead of twenty, and nothing waits longer than the rest of
// the turn. `send` answers with one result per item, in order; each add gets its own item's result, or
// the group's failure.
//
// `eager`: the turn's first item goes out at once, on its own, and only the rest wait for the turn's end.
// For work a caller waits on (rate limits before the upstream call): a quiet replica has nothing to batch
// with, and the caller overlaps the round trip with what it does next.
//
// `windowMs`: items wait up to this long instead of to the turn's end, so work nobody waits on is sent once
// per window rather than once per call, and not in the middle of the calls it belongs to.

export interface TurnBatcherOptions {
  eager?: boolean;
  windowMs?: number;
}

interface Pending<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class TurnBatcher<T, R = void> {
  private pending = new Map<string, Pending<T, R>[]>();
  /** a flush is due at the end of this turn or window (also: an eager item already went out in it) */
  private scheduled = false;

  private readonly eager: boolean;
  private readonly windowMs: number;

  constructor(
    private readonly send: (group: string, items: T[]) => Promise<R[] | void>,
    options: TurnBatcherOptions = {},
  ) {
    this.eager = options.eager ?? false;
    this.windowMs = options.windowMs ?? 0;
  }

  add(group: string, item: T): Promise<R> {
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.windowMs > 0) atWindowEnd(this.flush, this.windowMs);
      else atTurnEnd(this.flush);
      if (this.eager) return this.sendGroup(group, [item]).then((results) => (results as R[] | undefined)?.[0] as R);
    }
    let g = this.pending.get(group);
    if (g === undefined) this.pending.set(group, (g = []));
    return new Promise<R>((resolve, reject) => g.push({ item, resolve, reject }));
  }

  /** Whether items of this group wait for the next send. */
  waiting(group: string): boolean {
    return this.pending.has(group);
  }

  /** Sends everything pending now (also on shutdown); resolves when those sends are done. */
  readonly flush = (): Promise<void> => {
    if (this.pending.size === 0) {
      this.scheduled = false;
      return Promise.resolve();
    }
    const pending = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    const sends: Promise<void>[] = [];
    for (const [group, g] of pending) {
      sends.push(
        this.sendGroup(
          group,
          g.map((x) => x.item),
        ).then(
          (results) => {
            for (let i = 0; i < g.length; i++) g[i]!.resolve((results as R[] | undefined)?.[i] as R);
          },
          (err: unknown) => {
            for (const x of g) x.reject(err);
          },
        ),
      );
    }
    return Promise.all(sends).then(() => undefined);
  };

  private sendGroup(group: string, items: T[]): Promise<R[] | void> {
    try {
      return this.send(group, items);
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
