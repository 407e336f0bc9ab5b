// After `npm ci`/`npm install` in a checkout: build everything once (turbo: the Prisma client, the data plane and
// control plane as JavaScript, the console), so that `npm start` on a fresh clone serves everything. A failed
// build fails the install: the start commands run the built JavaScript and would only fail later, less clearly.
// The release tree (scripts/release-tree.sh) has no postinstall: it ships the built files.
import { execFileSync } from "node:child_process";

process.env.TURBO_TELEMETRY_DISABLED ??= "1";
try {
  execFileSync("npx", ["--no-install", "turbo", "run", "build", "--output-logs=errors-only"], { stdio: "inherit" });
} catch {
  console.error("modelgate: `npm run build` failed during install; run it to see why.");
  process.exit(1);
}
