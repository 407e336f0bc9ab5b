import type { IncomingMessage, ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import { renderOpenAIError } from "../protocols/openai/errors.ts";
import { keyHashFrom } from "./auth.ts";
import type { DataPlaneOptions } from "./context.ts";
import { authorise, handleOpenAIChat } from "./openai-chat.ts";
import { newRequestId } from "./request-id.ts";
import { REQUEST_ID_HEADER, sendError, sendJson } from "./respond.ts";

/**
 * The data plane's request handler. Returns false for paths it does not own (so the embedded process can
 * hand them to the control plane and console); `strict` makes it answer every path itself.
 */
export function createDataPlaneHandler(opts: DataPlaneOptions, strict: boolean) {
  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    if (path === "/healthz") {
      sendJson(res, 200, '{"status":"ok"}');
      return true;
    }
    if (path === "/readyz") {
      const age = opts.store.ageMs();
      const ok = opts.ready() && opts.store.loaded;
      sendJson(res, ok ? 200 : 503, JSON.stringify({ status: ok ? "ready" : "not ready", snapshotVersion: opts.store.version, snapshotAgeMs: Number.isFinite(age) ? age : null }));
      return true;
    }
    const ours = path.startsWith("/v1/") || path.startsWith("/v1beta/") || path === "/v1" || path.startsWith("//");
    if (!ours && !strict) return false;

    const requestId = newRequestId();
    res.setHeader(REQUEST_ID_HEADER, requestId);
    try {
      if (path === "/v1/chat/completions") {
        if (req.method !== "POST") throw methodNotAllowed(req.method, path, "POST");
        await handleOpenAIChat(opts, req, res, requestId);
        return true;
      }
      if (path === "/v1/models") {
        if (req.method !== "GET") throw methodNotAllowed(req.method, path, "GET");
        const auth = authorise(opts, keyHashFrom(req.headers), Date.now());
        const allowed = auth.key.allowedModels;
        const data = Object.values(opts.store.current.models)
          .filter((m) => allowed.length === 0 || allowed.includes(m.id))
          .map((m) => ({ id: m.id, object: "model", created: Math.floor(Date.parse(m.createdAt) / 1000), owned_by: "modelgate" }));
        sendJson(res, 200, JSON.stringify({ object: "list", data }));
        return true;
      }
      throw notFound(path);
    } catch (err) {
      sendError(res, err, renderOpenAIError, requestId);
      return true;
    }
  };
}

const methodNotAllowed = (method: string | undefined, path: string, allowed: string) =>
  new GatewayError("invalid_request", "method_not_allowed", `Method ${method} is not allowed on ${path}; use ${allowed}.`, null, { allow: allowed }, 405);

/** Names the path and the base-URL rule, since a wrong base URL is the usual cause. */
const notFound = (path: string) =>
  new GatewayError(
    "not_found",
    "unknown_path",
    `Unknown path '${path}'. The base URL must end in '/v1' with no trailing slash (for example https://gateway.example/v1), and requests go to paths such as /v1/chat/completions.`,
  );
