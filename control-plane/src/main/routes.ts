import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { ensureAdminToken } from "../admin/token.ts";
import { startAuditRetention } from "../audit/retention.ts";
import { deliveryOptionsFromEnv } from "../alerts/deliver.ts";
import { startBillingRetention } from "../alerts/retention.ts";
import { AlertRunner } from "../alerts/runner.ts";
import { controlCalendar } from "../budgets/calendar.ts";
import { ensureOperator } from "../services/users.ts";
import { OidcSignIn } from "../auth/oidc.ts";
import { resumeExports, startExportRetention } from "../exports/runner.ts";
import { createGraphqlHandler } from "../graphql/handler.ts";
import type { AppContext } from "../graphql/context.ts";
import { createAdminRoute } from "../http/admin-route.ts";
import { createApiRoutes } from "../http/api-routes.ts";
import { createOidcRoutes } from "../http/oidc-routes.ts";
import type { Route } from "../http/app.ts";
import { createStaticRoute } from "../http/static.ts";
import { createMailer } from "../mail/mailer.ts";
import type { ServiceContext } from "../services/context.ts";
import { backfillPending, backfillUsage } from "../usage/backfill.ts";
import { startUsagePartitions, usageRetentionDays } from "../usage/partitions.ts";
import type { Settings } from "../settings/settings.ts";

/**
 * The control plane's HTTP surface, the same in both modes: GraphQL, export downloads, the admin endpoint
 * the CLI uses, and the console. Also makes sure an operator can sign in on a fresh install.
 */
export async function controlPlaneRoutes(
  ctx: ServiceContext,
  settings: Settings,
  logger: Logger,
  /** the upstreams' breaker states, where this process serves the API too (embedded mode) */
  breakers?: () => Record<string, string> | Promise<Record<string, string>>,
): Promise<{ routes: Route[]; app: AppContext; alerts: AlertRunner }> {
  const mail = createMailer({ smtpUrl: settings.smtpUrl, outboxDir: join(settings.dataDir, "outbox") });
  const delivery = deliveryOptionsFromEnv(ctx.masterKey);
  const alerts = new AlertRunner({
    prisma: ctx.prisma,
    mail,
    calendar: controlCalendar,
    delivery,
    logger,
    intervalMs: Number(process.env.MODELGATE_ALERTS_INTERVAL_MS ?? 60_000),
    breakerIntervalMs: Number(process.env.MODELGATE_ALERTS_BREAKER_MS ?? 5_000),
    breakers,
  });
  const app: AppContext = {
    ...ctx,
    mail,
    dataDir: settings.dataDir,
    secureCookies: settings.secureCookies,
    dev: settings.dev,
    alerts: { runner: alerts, delivery },
    breakers,
  };
  await bootstrapOperator(ctx, settings, logger);
  // Exports a previous process left unfinished start again from the beginning.
  void Promise.resolve(resumeExports(app)).catch((err) => logger.error({ err }, "could not resume exports"));
  startExportRetention(app, (err) => logger.error({ err }, "export retention failed"));
  startBillingRetention(
    ctx.prisma,
    controlCalendar,
    (err) => logger.error({ err }, "billing history retention failed"),
    (pruned) => logger.info(pruned, "billing history pruned"),
  );
  startAuditRetention(ctx.prisma, settings.auditRetentionDays, (err) =>
    logger.error({ err }, "audit log retention failed"),
  );
  // The usage log's day partitions ahead and its retention; a large log left unpartitioned by the migration is
  // copied across in the background.
  startUsagePartitions(
    ctx.prisma,
    usageRetentionDays(),
    (err) => logger.error({ err }, "usage log partitions: maintenance failed"),
    (r) => {
      if (r.created.length || r.dropped.length || r.deleted)
        logger.info(r, "usage log partitions: created ahead, expired dropped");
    },
  );
  void backfillPending(ctx.prisma)
    .then(async (pending) => {
      if (!pending) return;
      logger.info("usage log: copying the unpartitioned log into the partitioned one");
      const moved = await backfillUsage(ctx.prisma);
      logger.info({ moved }, "usage log: copy finished");
    })
    .catch((err) => logger.error({ err }, "usage log: copying the unpartitioned log failed"));
  const graphql = createGraphqlHandler(app);
  const graphqlRoute: Route = async (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/graphql") return false;
    await graphql(req, res);
    return true;
  };
  const adminToken = ensureAdminToken(settings.dataDir, process.env.MODELGATE_ADMIN_TOKEN);
  const sso = settings.oidc ? new OidcSignIn(settings.oidc, ctx.prisma, ctx.masterKey) : null;
  const ssoRoute = createOidcRoutes(sso, settings.secureCookies, logger);
  alerts.start();
  return {
    alerts,
    routes: [graphqlRoute, createApiRoutes(app), ssoRoute, createAdminRoute(ctx, adminToken), createStaticRoute()],
    app,
  };
}

/** The first operator: from MODELGATE_OPERATOR_PASSWORD, or a generated password written once to the data dir. */
async function bootstrapOperator(ctx: ServiceContext, settings: Settings, logger: Logger): Promise<void> {
  const file = join(settings.dataDir, "operator-initial-password");
  let password = settings.operatorPassword;
  if (!password) {
    if (existsSync(file)) return;
    password = randomBytes(12).toString("base64url");
  }
  const { created } = await ensureOperator(ctx, { email: settings.operatorEmail, password });
  if (created && !settings.operatorPassword) {
    writeFileSync(file, `${settings.operatorEmail}\n${password}\n`, { mode: 0o600 });
    logger.info(
      { email: settings.operatorEmail, passwordFile: file },
      "created the first operator; its password is in the file",
    );
  }
}
