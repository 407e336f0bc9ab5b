import type { AddressInfo } from "node:net";
import {
  SnapshotStore,
  InProcessUsageSink,
  createDataPlaneHandler,
  createGatewayServer,
  createDataPlaneOptions,
  createLogger,
  initTracing,
  inSpan,
} from "@modelgate/data-plane";
import { DEMO_MODEL_ID } from "../config/sync.ts";
import type { AlertRunner } from "../alerts/runner.ts";
import { keyDisabledReported } from "./key-reports.ts";
import { chain, notFound } from "../http/app.ts";
import { exportsIdle } from "../exports/runner.ts";
import { settleUsageBatch } from "../usage/settle.ts";
import { InProcessPolicyBus } from "../snapshot/memory-bus.ts";
import { bootControlPlane } from "./bootstrap.ts";
import { controlPlaneRoutes } from "./routes.ts";
import { advertise, DataDirLocked, localUrl, lockDataDir, tighten } from "../settings/data-dir.ts";
import { readSettings } from "../settings/settings.ts";
import { onShutdown } from "./shutdown.ts";

// Embedded mode: control plane, data plane and console in one process, PGlite under ./data, in-process bus.

const logger = createLogger("modelgate");
const tracing = await initTracing("modelgate");
const settings = readSettings(process.env, 8080);
settings.databaseUrl = undefined; // embedded mode always uses PGlite; DATABASE_URL selects distributed mode
if (settings.tightened > 0)
  logger.warn(
    { dataDir: settings.dataDir, entries: settings.tightened },
    "data directory was readable or writable by others; made it private (0700, files 0600)",
  );
// One process at a time on the database: a second server, or the admin CLI opening it directly, is refused.
try {
  lockDataDir(settings.dataDir, "server");
} catch (err) {
  if (!(err instanceof DataDirLocked)) throw err;
  console.error(err.message);
  process.exit(2);
}

const store = new SnapshotStore((kind, id, err) => logger.error({ kind, err }, "invalid policy entity ignored"));
const core = await bootControlPlane(settings, new InProcessPolicyBus(store), logger);
// PGlite gives its files modes of its own (0666) whatever the umask: they are made private once it is open.
logger.debug({ entries: tighten(settings.dataDir) }, "database files made private");
// Evaluated after settlement (set once the routes are up; settlement cannot start before them).
const alerts: { runner?: AlertRunner } = {};
const usage = new InProcessUsageSink(
  async (events) => {
    await inSpan(tracing, "modelgate.usage.settle", { "modelgate.usage.events": events.length }, () =>
      settleUsageBatch(core.db, events),
    );
    core.publisher.settled(); // balances and spend moved: the touched keys and accounts are published
    alerts.runner?.settled(events.map((e) => e.accountId));
  },
  (err, events) => logger.error({ err, requestIds: events.map((e) => e.requestId) }, "usage settlement failed"),
);
let draining = false;
const dataPlaneOptions = createDataPlaneOptions({
  store,
  usage,
  logger,
  masterKey: settings.masterKey,
  ready: () => !draining,
});
// Pooled upstream keys: the data plane's own states are what the operator sees, and a disable is recorded here.
const keyHealth = dataPlaneOptions.keyHealth!;
core.ctx.keyStates = {
  states: async () => keyHealth.states(Date.now()),
  clear: async (upstream, key) => keyHealth.enable(upstream, key),
};
keyHealth.onDisable((d) => void keyDisabledReported(core.ctx, () => alerts.runner, d, logger));
const dataPlane = createDataPlaneHandler(dataPlaneOptions, false);
// Whatever nobody else claims is an API 404 in OpenAI's shape (the console only answers GETs).
const apiNotFound = createDataPlaneHandler(dataPlaneOptions, true);
const { routes, alerts: runner } = await controlPlaneRoutes(core.ctx, settings, logger, () =>
  dataPlaneOptions.breakers.states(Date.now()),
);
alerts.runner = runner;
const handler = chain([dataPlane, ...routes, apiNotFound], notFound);
const server = createGatewayServer((req, res) => void handler(req, res));
server.listen(settings.port, settings.host, () => {
  const { address, port } = server.address() as AddressInfo;
  // Where the admin CLI finds this server: it reads the data directory it is pointed at, never guesses a port.
  advertise(settings.dataDir, localUrl(address, port));
  const base = `http://localhost:${port}`;
  console.log(`
modelgate is running (embedded mode, data in ${settings.dataDir})
  API base URL   ${base}/v1
  Console        ${base}/
  GraphQL        ${base}/graphql
  Health         ${base}/healthz
Get a key:
  npm run admin -- account create --name demo --balance 10
  npm run admin -- key create --account demo
First call:
  curl ${base}/v1/chat/completions -H "Authorization: Bearer <API_KEY>" -H "Content-Type: application/json" \\
    -d '{"model":"${settings.configPath ? "<model id>" : DEMO_MODEL_ID}","messages":[{"role":"user","content":"Hello"}]}'
`);
});

onShutdown(
  logger,
  async () => {
    core.configWatcher?.stop();
    draining = true;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await usage.flush();
    await alerts.runner?.stop();
    await core.publisher.flush();
    await exportsIdle();
    core.publisher.stop();
    await dataPlaneOptions.close();
    await core.db.close();
    await tracing?.shutdown();
  },
  server,
);
