#!/usr/bin/env node
// The admin CLI as built JavaScript (npm run build writes control-plane/dist); a missing build is said plainly.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cli = new URL("../dist/admin/cli.js", import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  console.error("modelgate-admin: control-plane/dist is missing; run `npm run build` first.");
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
