// Generates the Prisma client offline. Prisma's CLI wants a schema-engine binary to exist before it
// generates, and would download one; `generate` never runs it, so an empty placeholder is enough.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
let cli;
try {
  cli = require.resolve("prisma/build/index.js");
} catch {
  console.log("prisma CLI not installed (production install?): skipping client generation");
  process.exit(0);
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
execFileSync(process.execPath, [cli, "generate"], { stdio: "inherit", env });
