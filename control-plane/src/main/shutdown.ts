import type { Server } from "node:http";
import type { Logger } from "pino";

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests and streams finish up to a deadline, then run the
 * cleanup (flush usage, close pools). A second signal exits at once.
 */
export function onShutdown(
  logger: Logger,
  cleanup: () => Promise<void>,
  server: Server,
  deadlineMs = Number(process.env.MODELGATE_DRAIN_MS ?? 25_000),
): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "draining");
    server.closeIdleConnections();
    const force = setTimeout(() => {
      logger.warn("drain deadline reached; closing remaining connections");
      server.closeAllConnections();
    }, deadlineMs);
    force.unref();
    cleanup()
      .then(() => process.exit(0))
      .catch((err) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/**
 * Runs `work` for at most `ms`: past that, `onLate` is told and the returned promise resolves anyway (the work
 * is abandoned; the process is about to exit). For the shutdown steps that wait on Redis or Postgres, which may
 * be down: with Redis away the control plane's shutdown waited ~11 s on its commands' retries.
 */
export async function within(ms: number, work: () => Promise<void>, onLate: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      onLate();
      resolve();
    }, ms);
    timer.unref();
  });
  try {
    await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}
