import { createServer } from "node:http";
import { SnapshotStore } from "@modelgate/data-plane/snapshot/store";
import { InProcessUsageSink } from "@modelgate/data-plane/usage/sink";
import { createDataPlaneHandler } from "@modelgate/data-plane/server/app";
import { createDataPlaneOptions } from "@modelgate/data-plane/runtime";
import { createLogger } from "@modelgate/data-plane/logger";
import { DEMO_MODEL_ID } from "../config/sync.ts";
import { chain, notFound } from "../http/app.ts";
import { exportsIdle } from "../exports/runner.ts";
import { settleUsageBatch } from "../usage/settle.ts";
import { bootControlPlane } from "./bootstrap.ts";
import { controlPlaneRoutes } from "./routes.ts";
import { readSettings } from "./settings.ts";
import { onShutdown } from "./shutdown.ts";

// Embedded mode: control plane, data plane and console in one process, PGlite under ./data, in-process bus.

const logger = createLogger("modelgate");
const settings = readSettings(process.env, 8080);
settings.databaseUrl = undefined; // embedded mode always uses PGlite; DATABASE_URL selects distributed mode

const store = new SnapshotStore();
let version = 0;
const core = await bootControlPlane(settings, { publish: async (s) => void store.apply(s), nextVersion: async () => ++version }, logger);
const usage = new InProcessUsageSink(
  async (events) => {
    await settleUsageBatch(core.db, events);
    core.publisher.settled(); // balances and spend moved
  },
  (err, events) => logger.error({ err, requestIds: events.map((e) => e.requestId) }, "usage settlement failed"),
);
let draining = false;
const dataPlaneOptions = createDataPlaneOptions({ store, usage, logger, masterKey: settings.masterKey, ready: () => !draining });
const dataPlane = createDataPlaneHandler(dataPlaneOptions, false);
// Whatever nobody else claims is an API 404 in OpenAI's shape (the console only answers GETs).
const apiNotFound = createDataPlaneHandler(dataPlaneOptions, true);
const { routes } = await controlPlaneRoutes(core.ctx, settings, logger);
const handler = chain([dataPlane, ...routes, apiNotFound], notFound);
const server = createServer((req, res) => void handler(req, res));
server.keepAliveTimeout = 65_000;
server.listen(settings.port, settings.host, () => {
  const base = `http://localhost:${settings.port}`;
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

onShutdown(logger, async () => {
  draining = true;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await usage.flush();
  await core.publisher.flush();
  await exportsIdle();
  core.publisher.stop();
  await dataPlaneOptions.close();
  await core.db.close();
}, server);
