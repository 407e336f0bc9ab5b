import { randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// The running server's admin endpoint takes a token kept in the data directory (readable by the operator
// who runs the server only), so the CLI can act while PGlite is held open by the server process.

export const adminTokenPath = (dataDir: string) => join(dataDir, "admin-token");

export function ensureAdminToken(dataDir: string, fromEnv?: string): string {
  if (fromEnv) return fromEnv;
  const file = adminTokenPath(dataDir);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const token = `mga_${randomBytes(24).toString("hex")}`;
  writeFileSync(file, token, { mode: 0o600 });
  return token;
}

export function readAdminToken(dataDir: string): string | null {
  const file = adminTokenPath(dataDir);
  return existsSync(file) ? readFileSync(file, "utf8").trim() : null;
}

export const sameToken = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};
