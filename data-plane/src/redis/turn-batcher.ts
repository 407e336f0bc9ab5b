import { atTurnEnd } from "./write-batch.ts";

// Collects what the calls of one event-loop turn want from Redis, by group (an account's hash tag, a spend
// counter), and sends each group once at the end of the turn (see write-batch.ts): a turn that handled
// twenty calls sends one command per group instead of twenty, and nothing waits longer than the rest of
// the turn. `send` answers with one result per item, in order; each add gets its own item's result, or
// the group's failure.

interface Pending<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class TurnBatcher<T, R = void> {
  private pending = new Map<string, Pending<T, R>[]>();
  private scheduled = false;

  constructor(private readonly send: (group: string, items: T[]) => Promise<R[] | void>) {}

  add(group: string, item: T): Promise<R> {
    let g = this.pending.get(group);
    if (g === undefined) this.pending.set(group, (g = []));
    const p = new Promise<R>((resolve, reject) => g.push({ item, resolve, reject }));
    if (!this.scheduled) {
      this.scheduled = true;
      atTurnEnd(this.flush);
    }
    return p;
  }

  /** Sends everything pending now (also on shutdown); resolves when those sends are done. */
  readonly flush = (): Promise<void> => {
    const pending = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    if (pending.size === 0) return Promise.resolve();
    const sends: Promise<void>[] = [];
    for (const [group, g] of pending) {
      let p: Promise<R[] | void>;
      try {
        p = this.send(
          group,
          g.map((x) => x.item),
        );
      } catch (err) {
        p = Promise.reject(err);
      }
      sends.push(
        p.then(
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
}
