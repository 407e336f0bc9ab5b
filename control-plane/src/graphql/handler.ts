import type { IncomingMessage, ServerResponse } from "node:http";
import { type ExecutionResult, getOperationAST, GraphQLError } from "graphql";
import { newRequestId } from "@modelgate/data-plane";
import { createYoga, type Plugin } from "graphql-yoga";
import type { AuditActor } from "../audit/record.ts";
import { authenticate } from "../auth/principal.ts";
import { serializeSessionCookie } from "../auth/cookies.ts";
import { SESSION_TTL_MS } from "../auth/sessions.ts";
import type { AppContext, GqlContext } from "./context.ts";
import { maskError } from "./errors.ts";
import { graphqlLimitsFrom, limitPlugins } from "./limits.ts";
import { schema } from "./schema/index.ts";
import { tracingPlugin } from "./tracing-plugin.ts";
import { requestOrigin } from "../auth/request-origin.ts";

export type { AppContext } from "./context.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

interface ServerContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Set-Cookie values the resolvers asked for */
  cookies: string[];
  /** this request's id: the X-Gateway-Request-Id header and every error's extensions.requestId */
  requestId: string;
}

/** Tokens carry scopes: queries need `read`, mutations `write` (sessions have every scope their role allows). */
const tokenScopePlugin: Plugin = {
  onExecute({ args, setResultAndStopExecution }) {
    const ctx = args.contextValue as unknown as GqlContext;
    const scopes = ctx.principal?.tokenScopes;
    if (!scopes) return;
    const op = getOperationAST(args.document, args.operationName);
    const need = op?.operation === "mutation" ? "write" : "read";
    if (!scopes.includes(need)) {
      setResultAndStopExecution({
        // (With no data at all, yoga would answer 500 unless the error names its status.)
        errors: [
          new GraphQLError(`this access token lacks the '${need}' scope`, {
            extensions: { code: "FORBIDDEN", http: { status: 403 } },
          }),
        ],
      });
    }
  },
};

/** Every error carries the request's id (as the header does), so a user can quote it to support. */
const requestIdPlugin: Plugin<object, ServerContext> = {
  onResultProcess({ result, setResult, serverContext }) {
    const id = serverContext.requestId;
    const tag = (r: ExecutionResult): ExecutionResult =>
      r.errors?.length
        ? {
            ...r,
            errors: r.errors.map(
              (e) =>
                new GraphQLError(e.message, {
                  nodes: e.nodes,
                  source: e.source,
                  positions: e.positions,
                  path: e.path,
                  originalError: e.originalError,
                  extensions: { ...e.extensions, requestId: id },
                }),
            ),
          }
        : r;
    if (Array.isArray(result)) setResult(result.map(tag));
    else if (result && !(Symbol.asyncIterator in result)) setResult(tag(result as ExecutionResult));
  },
};

const cookiePlugin: Plugin<object, ServerContext> = {
  onResponse({ response, serverContext }) {
    for (const c of serverContext.cookies ?? []) response.headers.append("set-cookie", c);
  },
};

function refuse(res: ServerResponse, status: number, code: string, message: string) {
  const requestId = res.getHeader("x-gateway-request-id");
  const body = JSON.stringify({ errors: [{ message, extensions: { code, requestId } }] });
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * POST/GET /graphql. Authentication: `Authorization: Bearer mgp_…` (personal access token) or the `mg_session`
 * cookie. CSRF: a POST must be `application/json` or carry `x-mg-csrf: 1` (both force a CORS preflight, and no
 * CORS is granted); mutations over GET are refused by yoga.
 */
export function createGraphqlHandler(app: AppContext): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const yoga = createYoga<ServerContext, GqlContext>({
    schema,
    graphqlEndpoint: "/graphql",
    graphiql: app.dev ? { title: "modelgate GraphQL" } : false,
    landingPage: false,
    cors: false,
    batching: false,
    // internal errors are logged once by maskError (structured, without request data)
    logging: false,
    maskedErrors: { maskError: (error, message) => maskError(error, message) },
    plugins: [
      ...limitPlugins(graphqlLimitsFrom(process.env, app.dev)),
      tokenScopePlugin,
      cookiePlugin,
      requestIdPlugin,
      tracingPlugin,
    ],
    context: async ({ request, cookies, req }): Promise<GqlContext> => {
      const origin = requestOrigin(req);
      const auth = await authenticate(app.prisma, {
        authorization: request.headers.get("authorization"),
        cookie: request.headers.get("cookie"),
      });
      const setSessionCookie = (token: string | null) =>
        cookies.push(
          serializeSessionCookie(token ?? "", {
            secure: app.secureCookies || origin.https,
            maxAge: token ? Math.floor(SESSION_TTL_MS / 1000) : 0,
          }),
        );
      if (auth.clearCookie) setSessionCookie(null);
      if (auth.error) {
        throw new GraphQLError(auth.error.message, { extensions: { code: auth.error.code, http: { status: 401 } } });
      }
      // The services see who acts (for the audit log) through the app context of this request.
      const p = auth.principal;
      const actor: AuditActor = p
        ? { type: "user", userId: p.user.id, email: p.user.email, via: p.via, address: origin.clientIp }
        : { type: "anonymous", address: origin.clientIp };
      return { app: { ...app, actor }, auth, principal: p, setSessionCookie, clientIp: origin.clientIp };
    },
  });

  return async (req, res) => {
    const requestId = newRequestId();
    res.setHeader("x-gateway-request-id", requestId);
    if (req.method === "POST") {
      const type = (req.headers["content-type"] ?? "").toLowerCase();
      if (!type.startsWith("application/json") && !req.headers["x-mg-csrf"]) {
        return refuse(res, 403, "CSRF", "send the request as application/json or with the header x-mg-csrf: 1");
      }
      const length = Number(req.headers["content-length"] ?? 0);
      if (length > MAX_BODY_BYTES) return refuse(res, 413, "PAYLOAD_TOO_LARGE", "the request body is too large");
    }
    await (
      yoga.requestListener as unknown as (
        req: IncomingMessage,
        res: ServerResponse,
        ctx: { cookies: string[]; requestId: string },
      ) => Promise<void>
    )(req, res, { cookies: [], requestId });
  };
}
