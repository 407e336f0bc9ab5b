// After `npm ci`/`npm install`: generate the Prisma client (offline) and build the console, so that
// `npm start` on a fresh clone serves everything.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

execFileSync(process.execPath, ["scripts/prisma-generate.mjs"], { stdio: "inherit" });
if (existsSync("console/index.html") && existsSync("node_modules/vite/package.json")) {
  try {
    execFileSync("npm", ["run", "build", "-w", "console", "--silent"], { stdio: "inherit" });
  } catch {
    // The API works without the console; say so rather than failing the install.
    console.warn("modelgate: the console did not build; run `npm run build -w console` to see why.");
  }
}
