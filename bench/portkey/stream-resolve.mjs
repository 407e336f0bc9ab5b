// Module resolve hook registered by stream-hook.mjs.
export async function resolve(specifier, context, next) {
  if (specifier === "@hono/node-server" || specifier.startsWith("@hono/node-server/")) {
    return next(specifier.replace("@hono/node-server", "hono-node-server-stream"), context);
  }
  return next(specifier, context);
}
