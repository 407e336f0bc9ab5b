import type { IncomingMessage, ServerResponse } from "node:http";
import { commandNames, runAdminCommand, UsageError, type CommandName } from "../admin/commands.ts";
import { sameToken } from "../admin/token.ts";
import { NotFoundError } from "../services/accounts.ts";
import { AppError } from "../services/errors.ts";
import type { ServiceContext } from "../services/context.ts";
import { requestOrigin } from "../auth/request-origin.ts";

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
};

/** POST /api/admin: {command, args} with `Authorization: Bearer <admin token>`; what the CLI calls. */
export function createAdminRoute(ctx: ServiceContext, token: string) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.url !== "/api/admin") return false;
    if (req.method !== "POST") return (json(res, 405, { error: "use POST" }), true);
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ") || !sameToken(auth.slice(7), token))
      return (json(res, 401, { error: "bad admin token" }), true);
    let body: { command?: string; args?: Record<string, unknown> };
    try {
      const chunks: Buffer[] = [];
      for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return (json(res, 400, { error: "body must be JSON" }), true);
    }
    if (!commandNames.includes(body.command as CommandName))
      return (json(res, 400, { error: `unknown command ${body.command}` }), true);
    try {
      const actor = { type: "admin_token" as const, address: requestOrigin(req).clientIp };
      let changed = false;
      const snapshotChanged = () => {
        changed = true;
        ctx.snapshotChanged();
      };
      const result = await runAdminCommand(
        { ...ctx, snapshotChanged, actor },
        body.command as CommandName,
        body.args ?? {},
      );
      // Read your writes: a key the CLI just created (or revoked) is in force when the command returns.
      if (changed) await ctx.policyPublished?.();
      json(res, 200, { result });
    } catch (err) {
      const status =
        err instanceof UsageError
          ? 400
          : err instanceof NotFoundError ||
              (err as { code?: string }).code === "P2025" ||
              (err instanceof AppError && err.code === "NOT_FOUND")
            ? 404
            : err instanceof AppError
              ? err.code === "CONFLICT"
                ? 409
                : 400
              : (err as { code?: string }).code === "P2002"
                ? 409
                : 500;
      json(res, status, { error: status === 500 ? "internal error" : (err as Error).message });
    }
    return true;
  };
}
