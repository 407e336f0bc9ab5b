import type { KeyDisabled, KeyEntry, RedisNames } from "@modelgate/data-plane";
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
};

/** Distributed mode: the replicas' shared key states, read and cleared in Redis. */
export function redisKeyStates(redis: RedisLike, names: Pick<RedisNames, "keyStates">): KeyStateLink {
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
      await redis.hdel(names.keyStates, `${upstream}\u0000${key}`);
    },
  };
}

/**
 * Distributed mode: reads the replicas' disable reports every `everyMs`, and about once a second clears the
 * shared state of keys enabled since (`reconcile`, e.g. clearEnabledKeyStates); returns a stop function.
 */
export function followKeyReports(
  redis: RedisLike,
  names: Pick<RedisNames, "keyEvents">,
  onReport: (d: KeyDisabled) => Promise<void>,
  onError: (err: unknown) => void,
  everyMs = 250,
  reconcile: () => Promise<unknown> = async () => undefined,
): () => Promise<void> {
  let running: Promise<void> | null = null;
  let ticks = 0;
  const tick = async () => {
    if (ticks++ % Math.max(1, Math.round(1_000 / everyMs)) === 0) await reconcile();
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
  const timer = setInterval(() => {
    if (running) return;
    running = tick()
      .catch(onError)
      .finally(() => (running = null));
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
