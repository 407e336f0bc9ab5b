#!/usr/bin/env bash
# CI's stand-in for the Docker image (no Docker engine here): builds the release tree the Dockerfile copies,
# installs it with `npm ci --omit=dev` in a fresh folder, starts the embedded product as an unprivileged user
# (nobody, through setpriv, when run as root) and waits for /healthz; then runs the admin CLI's bin the same way.
# Also proves the install has no build tools in it (tsx, vite, the TypeScript sources).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

SKIP_BUILD="${SKIP_BUILD:-0}" scripts/release-tree.sh "$work/app" >/dev/null
(cd "$work/app" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
for dev in tsx vite vitest turbo; do
  if [ -e "$work/app/node_modules/$dev" ]; then echo "release-smoke: $dev was installed by --omit=dev" >&2; exit 1; fi
done
if find "$work/app" -path "$work/app/node_modules" -prune -o -name '*.ts' ! -name '*.d.ts' -print | grep -q .; then
  echo "release-smoke: TypeScript sources in the release tree" >&2; exit 1
fi

as_user=()
if [ "$(id -u)" = "0" ]; then
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  chown nobody:nogroup "$work"
  chmod -R a+rX "$work/app"
fi
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
(cd "$work/app" && exec "${as_user[@]}" env HOME="$work" PORT="$port" MODELGATE_DATA_DIR="$work/data" DATABASE_URL= REDIS_URL= GATEWAY_CONFIG= \
  node control-plane/dist/main/embedded.js >"$work/server.log" 2>&1) &
pid=$!
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "release-smoke: the server exited" >&2; exit 1; fi
  sleep 0.5
done
body="$(curl -fsS "http://127.0.0.1:$port/healthz")" || { cat "$work/server.log" >&2; echo "release-smoke: no /healthz" >&2; exit 1; }
user="$(ps -o user= -p "$(pgrep -P "$pid" -f embedded.js || echo "$pid")" | tr -d ' ')"
echo "release-smoke: /healthz $body from a server running as ${user:-?}"
curl -fsS "http://127.0.0.1:$port/" | grep -q '<div id="app"' || { echo "release-smoke: the console is not served" >&2; exit 1; }
# The admin CLI's bin, as the same user: it finds the running server through the data directory.
(cd "$work/app" && "${as_user[@]}" env HOME="$work" MODELGATE_DATA_DIR="$work/data" \
  node control-plane/bin/modelgate-admin.js account create --name release-smoke --json) | grep -q '"release-smoke"' \
  || { echo "release-smoke: the admin CLI did not create an account" >&2; exit 1; }
echo "release-smoke: ok"
