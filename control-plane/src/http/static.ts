import { createReadStream, existsSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

export const consoleDist = fileURLToPath(new URL("../../../console/dist", import.meta.url));

const types: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
};

/** Serves the built console; unknown paths get index.html so client-side routes survive a reload. */
export function createStaticRoute(root = consoleDist) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    const path = decodeURIComponent((req.url ?? "/").split("?")[0]!);
    if (!existsSync(join(root, "index.html"))) {
      const body = "<!doctype html><title>modelgate</title><p>modelgate is running. The console is not built: run <code>npm run build -w console</code>.</p>";
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(body);
      return true;
    }
    let file = normalize(join(root, path));
    if (!file.startsWith(root)) return false;
    if (!existsSync(file) || statSync(file).isDirectory()) file = join(root, "index.html");
    const immutable = file.includes(`${root}/assets/`);
    res.writeHead(200, {
      "content-type": types[extname(file)] ?? "application/octet-stream",
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
      "x-content-type-options": "nosniff",
    });
    if (req.method === "HEAD") return res.end(), true;
    createReadStream(file).pipe(res);
    return true;
  };
}
