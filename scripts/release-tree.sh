#!/usr/bin/env bash
# Builds the release tree: what the Dockerfile copies into its runtime stage and what a production host installs
# with `npm ci --omit=dev`. Built JavaScript only (no TypeScript, no tests, no tsx): package.json files, the lock
# file, data-plane/dist, control-plane/dist (the Prisma client compiled in), control-plane/bin, console/dist and
# prisma/ (schema and migrations, applied by the server at start).
# Usage: scripts/release-tree.sh [out-dir]   (default: release/; run `npm run build` first, or let it run it)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-release}"

if [ "${SKIP_BUILD:-}" != "1" ]; then npm run build --silent >&2; fi
for f in data-plane/dist/index.js control-plane/dist/main/embedded.js control-plane/dist/generated/prisma/client.js console/dist/index.html; do
  [ -f "$f" ] || { echo "release-tree: $f is missing (did npm run build fail?)" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"/data-plane "$out"/control-plane "$out"/console "$out"/prisma
cp package-lock.json "$out"/
cp data-plane/package.json "$out"/data-plane/
cp control-plane/package.json "$out"/control-plane/
cp console/package.json "$out"/console/
cp -r data-plane/dist "$out"/data-plane/dist
cp -r control-plane/dist "$out"/control-plane/dist
cp -r control-plane/bin "$out"/control-plane/bin
cp -r console/dist "$out"/console/dist
cp prisma/schema.prisma "$out"/prisma/
cp -r prisma/migrations "$out"/prisma/migrations
[ -f LICENSE ] && cp LICENSE "$out"/

# The root package.json with start commands on the built JavaScript and no build-time scripts (no postinstall:
# the Prisma client is already compiled into control-plane/dist). Dependencies stay as they are, so the lock file
# still matches and `npm ci` accepts it.
node -e '
const fs = require("fs");
const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
pkg.scripts = {
  start: "node control-plane/dist/main/embedded.js",
  "start:control-plane": "node control-plane/dist/main/control-plane.js",
  "start:data-plane": "node data-plane/dist/workers.js",
  admin: "node control-plane/bin/modelgate-admin.js",
};
fs.writeFileSync(process.argv[1] + "/package.json", JSON.stringify(pkg, null, 2) + "\n");
' "$out"
echo "$out"
