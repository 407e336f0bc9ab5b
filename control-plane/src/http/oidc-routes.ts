import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { parseCookies, serializeCookie, serializeSessionCookie } from "../auth/cookies.ts";
import { FLOW_COOKIE, FLOW_TTL_MS, OidcError, type OidcSignIn, providerErrorCode } from "../auth/oidc.ts";
import { SESSION_TTL_MS } from "../auth/sessions.ts";
import type { Route } from "./app.ts";
import { requestOrigin } from "../auth/request-origin.ts";

// Single sign-on's HTTP: GET /auth/oidc (is it on, and its label: the console's sign-in page asks),
// GET /auth/oidc/login (off to the identity provider), GET /auth/oidc/callback (back, signed in).

const FLOW_PATH = "/auth/oidc";

function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

function redirect(res: ServerResponse, location: string, cookies: string[]) {
  res.writeHead(302, { location, "set-cookie": cookies, "cache-control": "no-store", "content-length": 0 });
  res.end();
}

export function createOidcRoutes(sso: OidcSignIn | null, secureCookiesAlways: boolean, logger: Logger): Route {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://control-plane");
    const secureCookies = secureCookiesAlways || requestOrigin(req).https;
    const clearFlow = serializeCookie(FLOW_COOKIE, "", { secure: secureCookies, maxAge: 0, path: FLOW_PATH });
    if (url.pathname !== FLOW_PATH && !url.pathname.startsWith(`${FLOW_PATH}/`)) return false;
    if (req.method !== "GET") {
      res.setHeader("allow", "GET");
      json(res, 405, { error: { code: "METHOD_NOT_ALLOWED", message: "use GET" } });
      return true;
    }
    if (url.pathname === FLOW_PATH) {
      json(res, 200, sso ? { enabled: true, label: sso.settings.label } : { enabled: false });
      return true;
    }
    if (!sso || (url.pathname !== `${FLOW_PATH}/login` && url.pathname !== `${FLOW_PATH}/callback`)) {
      json(res, 404, {
        error: { code: "NOT_FOUND", message: sso ? "no such route" : "single sign-on is not configured" },
      });
      return true;
    }
    try {
      if (url.pathname === `${FLOW_PATH}/login`) {
        const { location, cookie } = await sso.start(url.searchParams.get("returnTo"));
        redirect(res, location, [
          serializeCookie(FLOW_COOKIE, cookie, { secure: secureCookies, maxAge: FLOW_TTL_MS / 1000, path: FLOW_PATH }),
        ]);
        return true;
      }
      // The provider reports a refusal (the user cancelled, …) on the callback itself. Only its `error` code is
      // used, and only through a fixed list: its error_description is free text (injected text on our page).
      const providerError = url.searchParams.get("error");
      if (providerError)
        throw new OidcError(401, providerErrorCode(providerError), "The identity provider refused the sign-in.");
      const { token, returnTo, userId } = await sso.finish(
        url,
        parseCookies(req.headers.cookie).get(FLOW_COOKIE),
        requestOrigin(req).clientIp,
      );
      logger.info({ userId }, "signed in through single sign-on");
      redirect(res, returnTo, [
        clearFlow,
        serializeSessionCookie(token, { secure: secureCookies, maxAge: Math.floor(SESSION_TTL_MS / 1000) }),
      ]);
    } catch (err) {
      const known = err instanceof OidcError;
      logger.warn({ err: (err as Error).message, step: url.pathname }, "single sign-on failed");
      // a fixed code: the sign-in page shows its own message for it
      redirect(res, `/login?ssoError=${known ? err.code : "unavailable"}`, [clearFlow]);
    }
    return true;
  };
}
