import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { shapeParserErrors } from "./client-error.ts";
import { applyServerTimeouts, serverOptions, serverTimeoutsFrom } from "./timeouts.ts";

/**
 * An HTTP server with modelgate's timeouts (headers, body, keep-alive, idle socket; from the environment) and
 * Node's own parse errors answered in the caller's protocol shape. Every server of modelgate starts here.
 */
export function createGatewayServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  env: NodeJS.ProcessEnv = process.env,
): Server {
  const timeouts = serverTimeoutsFrom(env);
  const server = createServer(serverOptions(timeouts), handler);
  applyServerTimeouts(server, timeouts);
  return shapeParserErrors(server);
}
