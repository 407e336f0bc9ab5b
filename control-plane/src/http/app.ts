import type { IncomingMessage, ServerResponse } from "node:http";

export type Route = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** Tries each route in order; the first that claims the request answers it. */
export function chain(routes: Route[], fallback: (req: IncomingMessage, res: ServerResponse) => void) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      for (const route of routes) if (await route(req, res)) return;
      fallback(req, res);
    } catch (err) {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end('{"error":"internal error"}');
      } else res.destroy(err as Error);
    }
  };
}

export const notFound = (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(404, { "content-type": "application/json" });
  res.end('{"error":"not found"}');
};
