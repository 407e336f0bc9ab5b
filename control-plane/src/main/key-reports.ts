import { type KeyDisabled, type KeyEntry, type RedisNames, singleFlight } from "@modelgate/data-plane";
import type { Logger } from "pino";
import type { AlertRunner } from "../alerts/runner.ts";
import type { ServiceContext } from "../services/context.ts";
import { type KeyStateLink, recordKeyDisabled } from "../services/upstream-keys.ts";

// Where the control plane learns of upstream keys the data planes disabled (docs/routing.md, "Key health"):
// embedded mode from the one process's key health, distributed mode from the replicas' Redis list. Each
// report is recorded (once, however many replicas sent it) and alerted.

/** Records a disable and, when it changed the key, alerts the operators. */
export async function keyDisabledReported(
  ctx: ServiceContext,
  alerts: () => AlertRunner | undefined,
  d: KeyDisabled,
  logger: Logger,
): Promise<void> {
  try {
    if (await recordKeyDisabled(ctx, d)) {
      logger.warn({ upstream: d.upstream, key: d.key, reason: d.reason }, "upstream key disabled by a data plane");
      alerts()?.keyDisabled(d);
    }
  } catch (err) {
    logger.error({ err, upstream: d.upstream, key: d.key }, "could not record an upstream key's disable");
  }
}

type RedisLike = {
  hgetall(key: string): Promise<Record<string, string>>;
  hdel(key: string, ...fields: string[]): Promise<number>;
  lpop(key: string, count: number): Promise<string[] | null>;
  publish(channel: string, message: string): Promise<number>;
};

/**
 * Distributed mode: the replicas' shared key states, read and cleared in Redis. A clear is announced on the
 * states' channel, so the replicas put the key back in their rotation at once rather than at their next poll.
 */
export function redisKeyStates(
  redis: RedisLike,
  names: Pick<RedisNames, "keyStates" | "keyStatesChannel">,
): KeyStateLink {
  return {
    async states() {
      const out: Record<string, KeyEntry> = {};
      for (const [field, json] of Object.entries(await redis.hgetall(names.keyStates))) {
        try {
          out[field] = JSON.parse(json) as KeyEntry;
        } catch {
          /* not ours */
        }
      }
      return out;
    },
    async clear(upstream, key) {
      const field = `${upstream}\u0000${key}`;
      await redis.hdel(names.keyStates, field);
      await redis.publish(names.keyStatesChannel, field);
    },
  };
}

/** What followKeyReports returns. */
export interface KeyReports {
  /**
   * Reads the reports now (a replica announced a change on the states' channel); `reconcile`: clear the states
   * of keys enabled since, too (the admin CLI announced a change of the database).
   */
  wake(reconcile?: boolean): void;
  stop(): Promise<void>;
}

/**
 * Distributed mode: reads the replicas' disable reports when woken (the caller wakes it on each announcement of
 * the states' channel) and every `everyMs` in case one was missed, and with each timed read clears the shared
 * state of keys enabled since (`reconcile`, e.g. clearEnabledKeyStates). One read at a time; a wake during one
 * makes it read once more.
 */
export function followKeyReports(
  redis: RedisLike,
  names: Pick<RedisNames, "keyEvents">,
  onReport: (d: KeyDisabled) => Promise<void>,
  onError: (err: unknown) => void,
  everyMs = 2_000,
  reconcile: () => Promise<unknown> = async () => undefined,
): KeyReports {
  let reconcileNext = false;
  const drain = async () => {
    for (;;) {
      const batch = await redis.lpop(names.keyEvents, 100);
      if (!batch || batch.length === 0) return;
      for (const raw of batch) {
        let d: KeyDisabled;
        try {
          d = JSON.parse(raw) as KeyDisabled;
        } catch {
          continue;
        }
        if (typeof d.upstream !== "string" || typeof d.key !== "string" || typeof d.reason !== "string") continue;
        await onReport({ ...d, at: typeof d.at === "number" ? d.at : Date.now() });
      }
    }
  };
  let running: Promise<void> | null = null;
  const run = singleFlight(async () => {
    try {
      if (reconcileNext) {
        reconcileNext = false;
        await reconcile();
      }
      await drain();
    } catch (err) {
      onError(err);
    }
  });
  const wake = (withReconcile = false) => {
    if (withReconcile) reconcileNext = true;
    running = run();
  };
  const timer = setInterval(() => wake(true), everyMs);
  timer.unref();
  return {
    wake,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
