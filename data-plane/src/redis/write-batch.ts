import type { Redis } from "ioredis";

// Every Redis command ioredis sends is one write() on the socket; on the request path (limiter, spend,
// usage) that syscall was the data plane's largest single cost. Corking the socket for the rest of the
// event-loop turn lets Node hand everything the turn wrote to the kernel in one writev, and Redis reads it
// in one go. The turn ends in setImmediate, right after the poll phase, so commands wait microseconds:
// first the turn's deferred work runs (the TurnBatchers' sends), then every corked socket is uncorked.
//
// ioredis' own enableAutoPipelining does similar batching, but it runs one pipeline at a time and queues
// every later command behind the pending one: a reply that never comes stalls the client for good (seen
// here on a snapshot reload). A cork changes nothing about replies, timeouts or errors.

type Stream = Redis["stream"];

let deferred: (() => void)[] = [];
let corked: Stream[] = [];
let scheduled = false;
let ending = false;

function endTurn(): void {
  ending = true;
  try {
    const tasks = deferred;
    deferred = [];
    for (const task of tasks) {
      try {
        task();
      } catch {
        // a task reports its own failures through the promise it handed out
      }
    }
  } finally {
    const streams = corked;
    corked = [];
    for (const s of streams) s.uncork();
    ending = false;
    scheduled = false;
    if (deferred.length > 0) schedule();
  }
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(endTurn);
}

/** Runs `task` at the end of this event-loop turn, before the turn's Redis writes go out. */
export function atTurnEnd(task: () => void): void {
  deferred.push(task);
  if (!ending) schedule();
}

let windowTasks: (() => void)[] = [];
let windowTimer: NodeJS.Timeout | null = null;

function endWindow(): void {
  windowTimer = null;
  const tasks = windowTasks;
  windowTasks = [];
  // At the end of the turn the timer fires in, with that turn's other Redis writes, corked together.
  for (const task of tasks) atTurnEnd(task);
}

/**
 * Runs `task` once the current window ends: the first task of a window opens it for `ms` milliseconds, and
 * every task deferred meanwhile runs with it. For Redis writes nobody waits for, so that a quiet replica
 * sends them once per window rather than once per call.
 */
export function atWindowEnd(task: () => void, ms: number): void {
  windowTasks.push(task);
  if (windowTimer === null) windowTimer = setTimeout(endWindow, ms);
}

/** Batches this turn's writes on the client's current connection; call before sending a command. */
export function batchWritesThisTurn(redis: Redis): void {
  const stream = redis.stream as Stream | undefined;
  if (stream === undefined || redis.status !== "ready" || stream.writableCorked > 0) return;
  stream.cork();
  corked.push(stream);
  if (!ending) schedule();
}
