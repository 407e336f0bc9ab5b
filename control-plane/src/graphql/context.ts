import type { DeliveryOptions } from "../alerts/deliver.ts";
import type { AlertRunner } from "../alerts/runner.ts";
import type { Principal, RequestAuth } from "../auth/principal.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { ServiceContext } from "../services/context.ts";

/** What the process hands the API: services plus mail, the data directory and deployment switches. */
export type AppContext = ServiceContext & {
  mail: Mailer;
  dataDir: string;
  secureCookies: boolean;
  dev: boolean;
  /** the upstreams' breaker states: this process's data plane (embedded mode) or what the replicas report */
  breakers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** alert evaluation and webhook delivery (absent in tools that only run commands) */
  alerts?: { runner: AlertRunner; delivery: DeliveryOptions };
};

/** Per-request GraphQL context. */
export interface GqlContext {
  app: AppContext;
  auth: RequestAuth;
  principal: Principal | null;
  /** sets (token) or clears (null) the session cookie on the response */
  setSessionCookie(token: string | null): void;
  /** the caller's address (X-Forwarded-For only from MODELGATE_TRUSTED_PROXIES), for throttling */
  clientIp: string | null;
}
