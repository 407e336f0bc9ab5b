// Generates the Prisma client offline (part of `npm run build`; the postinstall runs it too). Prisma's CLI wants a
// schema-engine binary to exist before it generates, and would download one; `generate` never runs it, so an
// empty placeholder is enough. Runs from the repository root wherever it is called from (prisma.config.ts).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

process.chdir(fileURLToPath(new URL("..", import.meta.url)));
const require = createRequire(import.meta.url);
let cli;
try {
  cli = require.resolve("prisma/build/index.js");
} catch {
  // Generation is a build step: a production install runs the built tree, which already holds the client.
  console.error(
    "modelgate: the prisma CLI is not installed (a dev dependency), so the Prisma client cannot be generated here; build with a full install (npm ci && npm run build).",
  );
  process.exit(1);
}
const env = { ...process.env };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY || !existsSync(env.PRISMA_SCHEMA_ENGINE_BINARY)) {
  const dir = join(tmpdir(), "modelgate-prisma");
  mkdirSync(dir, { recursive: true });
  const placeholder = join(dir, "schema-engine-placeholder");
  if (!existsSync(placeholder)) writeFileSync(placeholder, "");
  env.PRISMA_SCHEMA_ENGINE_BINARY = placeholder;
}
env.PRISMA_HIDE_UPDATE_MESSAGE = "1";
// Generators other than the client (prisma-pothos-types) are commands found on PATH, as under npm run.
env.PATH = `${join(process.cwd(), "node_modules", ".bin")}${process.platform === "win32" ? ";" : ":"}${env.PATH ?? ""}`;
execFileSync(process.execPath, [cli, "generate"], { stdio: "inherit", env });
