import type { Server, ServerOptions } from "node:http";

// Every HTTP server of modelgate (data plane, control plane, embedded) gets the same timeouts, so no client can
// hold a socket open by sending nothing or one byte at a time:
//
//   headers    the request line and headers must arrive within this (from the first byte of the request)
//   request    the whole request, body included, must arrive within this
//   keep-alive an idle connection between two requests is closed after this
//   socket     a connection with no byte moving either way for this long is closed; it is longer than any
//              upstream's first-byte timeout, so it never cuts a call that is waiting for its answer, and a
//              stream that is flowing moves bytes, so it is never cut
//
// Node enforces the first two from a periodic sweep; the sweep runs every `checkMs`, so a limit is reached
// within limit + checkMs.

export interface ServerTimeouts {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
  socketIdleMs: number;
  checkMs: number;
}

export const defaultServerTimeouts: ServerTimeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 10_000,
  socketIdleMs: 300_000,
  checkMs: 1_000,
};

const VARS: Record<keyof ServerTimeouts, string> = {
  headersMs: "MODELGATE_HEADERS_TIMEOUT_MS",
  requestMs: "MODELGATE_REQUEST_TIMEOUT_MS",
  keepAliveMs: "MODELGATE_KEEPALIVE_TIMEOUT_MS",
  socketIdleMs: "MODELGATE_SOCKET_IDLE_TIMEOUT_MS",
  checkMs: "MODELGATE_TIMEOUT_CHECK_MS",
};

/** The timeouts from the environment (milliseconds, positive integers); a bad value stops the start. */
export function serverTimeoutsFrom(env: NodeJS.ProcessEnv): ServerTimeouts {
  const out = { ...defaultServerTimeouts };
  for (const [field, name] of Object.entries(VARS) as [keyof ServerTimeouts, string][]) {
    const v = env[name];
    if (v === undefined || v === "") continue;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new Error(`${name} must be a positive number of milliseconds; got '${v}'`);
    out[field] = n;
  }
  // Node refuses a headers timeout longer than the request timeout.
  if (out.headersMs > out.requestMs) out.headersMs = out.requestMs;
  return out;
}

/** Options for http.createServer: the two limits Node enforces from its sweep. */
export function serverOptions(t: ServerTimeouts): ServerOptions {
  return { headersTimeout: t.headersMs, requestTimeout: t.requestMs, connectionsCheckingInterval: t.checkMs };
}

/** The limits that are properties of a created server. */
export function applyServerTimeouts(server: Server, t: ServerTimeouts): Server {
  server.keepAliveTimeout = t.keepAliveMs;
  // With no 'timeout' listener Node destroys the socket; the request handlers see a 'close' and abort.
  server.setTimeout(t.socketIdleMs);
  return server;
}
