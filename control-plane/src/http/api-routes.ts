import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, join } from "node:path";
import { authenticate } from "../auth/principal.ts";
import { exportDir } from "../exports/runner.ts";
import type { AppContext } from "../graphql/context.ts";
import { mayReadExport } from "../graphql/schema/export.ts";

const DOWNLOAD = /^\/api\/exports\/([0-9a-f-]{36})\/download$/i;

function json(res: ServerResponse, status: number, code: string, message: string) {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** Non-GraphQL HTTP of the control plane: export downloads. Returns false when the path is not its own. */
export function createApiRoutes(app: AppContext): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return async (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (!path.startsWith("/api/exports/")) return false;
    const m = DOWNLOAD.exec(path);
    if (!m) {
      json(res, 404, "NOT_FOUND", "no such route");
      return true;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      json(res, 405, "METHOD_NOT_ALLOWED", "use GET");
      return true;
    }
    const auth = await authenticate(app.prisma, {
      authorization: req.headers.authorization,
      cookie: req.headers.cookie,
    });
    const p = auth.principal;
    if (!p || (p.tokenScopes && !p.tokenScopes.includes("read"))) {
      json(res, 401, "UNAUTHENTICATED", auth.error?.message ?? "sign in first");
      return true;
    }
    const operator = p.user.role === "operator" && (p.tokenScopes === null || p.tokenScopes.includes("operator"));
    const e = await app.prisma.export.findUnique({ where: { id: m[1]!.toLowerCase() } });
    if (!e || !mayReadExport(p.user, operator, e)) {
      json(res, 404, "NOT_FOUND", "export not found");
      return true;
    }
    if (e.status !== "ready" || !e.filePath) {
      json(res, 409, "NOT_READY", `the export is ${e.status}`);
      return true;
    }
    const file = join(exportDir(app.dataDir), basename(e.filePath));
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch {
      json(res, 410, "GONE", "the export file is no longer available");
      return true;
    }
    const ext = e.format === "csv" ? "csv" : "jsonl";
    res.writeHead(200, {
      "content-type": e.format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8",
      "content-length": size,
      "content-disposition": `attachment; filename="${e.kind}-${e.createdAt.toISOString().slice(0, 10)}-${e.id.slice(0, 8)}.${ext}"`,
      "cache-control": "private, no-store",
      "x-content-type-options": "nosniff",
    });
    if (req.method === "HEAD") {
      res.end();
      return true;
    }
    await new Promise<void>((resolve) => {
      const stream = createReadStream(file);
      stream.on("error", () => {
        res.destroy();
        resolve();
      });
      res.on("close", () => {
        stream.destroy();
        resolve();
      });
      stream.pipe(res);
    });
    return true;
  };
}
