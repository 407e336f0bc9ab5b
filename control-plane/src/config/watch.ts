import { createHash } from "node:crypto";
import { readFileSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import type { Logger } from "pino";
import type { ServiceContext } from "../services/context.ts";
import { parseConfig } from "./load.ts";
import { syncConfig } from "./sync.ts";

// Config hot reload: a change to the GATEWAY_CONFIG file, or SIGHUP, applies the file without a restart,
// through the same path as at start (syncConfig, then the policy push every data plane already follows).
// An invalid file is refused with its reason in the log, and the running config stays.

export interface ConfigWatcher {
  /** reads and applies the file now; resolves to what happened */
  reload(reason: string): Promise<"applied" | "unchanged" | "invalid">;
  stop(): void;
}

/** Editors save by writing a new file and renaming it over the old one: a burst of events, one reload. */
const DEBOUNCE_MS = 100;

export function watchConfig(
  ctx: ServiceContext,
  path: string,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): ConfigWatcher {
  const digest = (text: string) => createHash("sha256").update(text).digest("hex");
  let applied = (() => {
    try {
      return digest(readFileSync(path, "utf8"));
    } catch {
      return "";
    }
  })();
  // One reload at a time, in order: a second change during a sync waits for it.
  let queue: Promise<unknown> = Promise.resolve();
  const reload = (reason: string) => {
    const run = queue.then(async (): Promise<"applied" | "unchanged" | "invalid"> => {
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch (err) {
        logger.error(
          { config: path, reason, err: (err as Error).message },
          "config reload refused: the file cannot be read; the running config stays",
        );
        return "invalid";
      }
      const hash = digest(text);
      if (hash === applied) return "unchanged";
      let config;
      try {
        config = parseConfig(text, env);
      } catch (err) {
        logger.error(
          { config: path, reason, err: (err as Error).message },
          "config reload refused; the running config stays",
        );
        return "invalid";
      }
      try {
        await syncConfig(ctx, config);
      } catch (err) {
        logger.error(
          { config: path, reason, err: (err as Error).message },
          "config reload failed to apply (rolled back); the running config stays",
        );
        return "invalid";
      }
      applied = hash;
      logger.info(
        { config: path, reason, upstreams: config.upstreams.length, models: config.models.length },
        "config reloaded",
      );
      return "applied";
    });
    queue = run.catch(() => undefined);
    return run;
  };

  let timer: NodeJS.Timeout | null = null;
  const schedule = (reason: string) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void reload(reason);
    }, DEBOUNCE_MS);
  };
  // The folder, not the file: a rename over the file ends a watch on the file itself.
  let watcher: FSWatcher | null = null;
  try {
    const name = basename(path);
    watcher = watch(dirname(path), (_event, file) => {
      if (file === null || file === name) schedule("file changed");
    });
    watcher.on("error", (err) =>
      logger.warn({ config: path, err: err.message }, "config file watch failed; SIGHUP still reloads"),
    );
  } catch (err) {
    logger.warn({ config: path, err: (err as Error).message }, "cannot watch the config file; SIGHUP reloads it");
  }
  const onHup = () => void reload("SIGHUP");
  process.on("SIGHUP", onHup);
  return {
    reload,
    stop() {
      if (timer) clearTimeout(timer);
      watcher?.close();
      process.off("SIGHUP", onHup);
    },
  };
}
