import type { Logger } from "pino";
import { loadConfigFile } from "../config/load.ts";
import { demoConfig, syncConfig } from "../config/sync.ts";
import { type ConfigWatcher, watchConfig } from "../config/watch.ts";
import { openDatabase, type Database } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import type { ServiceContext } from "../services/context.ts";
import type { PolicyBus } from "../snapshot/publisher.ts";
import { SnapshotPublisher } from "../snapshot/publisher.ts";
import type { Settings } from "../settings/settings.ts";

export interface ControlPlaneCore {
  db: Database;
  ctx: ServiceContext;
  publisher: SnapshotPublisher;
  /** the config file, reloaded on change and on SIGHUP (none without GATEWAY_CONFIG) */
  configWatcher: ConfigWatcher | null;
}

/** Database up to date, config file applied, policy published: what both modes start with. */
export async function bootControlPlane(settings: Settings, bus: PolicyBus, logger: Logger): Promise<ControlPlaneCore> {
  const db = await openDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir });
  const applied = await migrate(db.sql);
  if (applied.length) logger.info({ applied }, "migrations applied");
  const publisher = new SnapshotPublisher(db, bus, 25, (err) => logger.error({ err }, "policy publish failed"), {
    onRound: (r) => {
      if (r.readMs + r.prepareMs + r.appendMs > 250) logger.warn(r, "slow policy round");
    },
    compactTombstones: settings.compactTombstones,
    onCompact: (head, threshold) =>
      logger.info(
        { epoch: head.epoch, tombstones: head.tombstones, entities: head.entities, threshold },
        "policy feed: compacting tombstones (a full publication beside the current epoch)",
      ),
    onBridge: (head, base) =>
      logger.warn(
        { epoch: head.epoch, base: base.cursor, from: base.from, lostEpoch: base.epoch, lostSeq: base.seq },
        "policy feed: Redis lost the feed; changes go to a bridge epoch while it is published again in full",
      ),
  });
  const ctx: ServiceContext = {
    prisma: db.prisma,
    copyOut: db.copyOut,
    snapshotChanged: publisher.changed,
    policyPublished: () => publisher.flush(),
    masterKey: settings.masterKey,
  };
  if (settings.configPath) {
    await syncConfig(ctx, loadConfigFile(settings.configPath));
    await syncConfig(ctx, { upstreams: [], models: [] }, "builtin"); // a configured gateway has no demo model
    logger.info({ config: settings.configPath }, "config file applied");
  } else {
    await syncConfig(ctx, demoConfig(), "builtin");
  }
  await publisher.start();
  const configWatcher = settings.configPath ? watchConfig(ctx, settings.configPath, logger) : null;
  return { db, ctx, publisher, configWatcher };
}
