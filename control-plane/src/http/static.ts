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

/**
 * Headers for every console response: a Content-Security-Policy that allows only this origin's scripts
 * (the console ships no inline script; styles may be inline, Vue binds some), no framing (clickjacking), no
 * MIME sniffing, no referrer leaking paths. `data:` images are the two-step QR code.
 */
export const CONSOLE_SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

/** Serves the built console; unknown paths get index.html so client-side routes survive a reload. */
export function createStaticRoute(root = consoleDist) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    let path: string;
    try {
      path = decodeURIComponent((req.url ?? "/").split("?")[0]!);
    } catch {
      // A malformed percent-escape is the caller's mistake, not a server error.
      const body = '{"error":"the path has a malformed percent-escape"}';
      res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return true;
    }
    if (!existsSync(join(root, "index.html"))) {
      const body =
        "<!doctype html><title>modelgate</title><p>modelgate is running. The console is not built: run <code>npm run build -w console</code>.</p>";
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...CONSOLE_SECURITY_HEADERS });
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
      ...CONSOLE_SECURITY_HEADERS,
    });
    if (req.method === "HEAD") return (res.end(), true);
    createReadStream(file).pipe(res);
    return true;
  };
}
