import { atTurnEnd } from "./write-batch.ts";

// Collects what the calls finishing in one event-loop turn want to write to Redis, by group (an account's
// hash tag, a spend counter), and sends each group once at the end of the turn (see write-batch.ts): a turn
// that finished twenty calls sends one command per group instead of twenty, and nothing waits longer than
// the rest of the turn. Each add gets the promise of its group's send.

interface Group<T> {
  items: T[];
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

export class TurnBatcher<T> {
  private pending = new Map<string, Group<T>>();
  private scheduled = false;

  constructor(private readonly send: (group: string, items: T[]) => Promise<void>) {}

  add(group: string, item: T): Promise<void> {
    let g = this.pending.get(group);
    if (g === undefined) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      g = { items: [], promise, resolve, reject };
      this.pending.set(group, g);
    }
    g.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      atTurnEnd(this.flush);
    }
    return g.promise;
  }

  /** Sends everything pending now (also on shutdown); resolves when those sends are done. */
  readonly flush = (): Promise<void> => {
    const pending = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    if (pending.size === 0) return Promise.resolve();
    const sends: Promise<void>[] = [];
    for (const [group, g] of pending) {
      let p: Promise<void>;
      try {
        p = this.send(group, g.items);
      } catch (err) {
        p = Promise.reject(err);
      }
      p.then(g.resolve, g.reject);
      sends.push(g.promise.catch(() => undefined));
    }
    return Promise.all(sends).then(() => undefined);
  };

  get size(): number {
    return this.pending.size;
  }
}
