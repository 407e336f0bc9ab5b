#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader, so the bin works from a plain npm install.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const cli = fileURLToPath(new URL("../src/admin/cli.ts", import.meta.url));
const r = spawnSync(process.execPath, ["--import", require.resolve("tsx/esm"), cli, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
