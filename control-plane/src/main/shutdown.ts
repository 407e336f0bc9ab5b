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
