import { Cluster, Redis, type RedisOptions } from "ioredis";

// One way to open Redis for both planes: a single server (`redis://…`, `rediss://…`) or a Redis Cluster
// (`redis+cluster://host:port,host:port,…`, `rediss+cluster://…` for TLS; credentials as in a URL:
// `redis+cluster://user:password@host:port,…`). The seed nodes need not be all of them: ioredis learns the
// rest from the cluster.
//
// Every key one command or script touches shares a hash tag (see contract/redis-names.ts and the
// `{acct:<id>}` tags of the rate-limit and spend keys), so every command modelgate sends is valid on a
// cluster. A cluster client is returned as a `Redis`: ioredis' Cluster has the same command surface
// (commands, scripts, pipelines of one slot, pub/sub), and the few places that reach below it (the socket
// cork in write-batch.ts) check for a single server first.

const CLUSTER = /^(rediss?)\+cluster:\/\/(.+)$/;

export interface RedisTarget {
  cluster: boolean;
  tls: boolean;
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
}

/** Parses a cluster URL; null for a single-server URL (which ioredis parses itself). */
export function parseClusterUrl(url: string): RedisTarget | null {
  const m = CLUSTER.exec(url.trim());
  if (!m) return null;
  let rest = m[2]!.replace(/\/.*$/, "");
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(":");
    username = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth) || undefined;
    password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) : undefined;
  }
  const nodes = rest.split(",").map((hp) => {
    const i = hp.lastIndexOf(":");
    const host = (i >= 0 ? hp.slice(0, i) : hp).replace(/^\[|\]$/g, "");
    const port = i >= 0 ? Number(hp.slice(i + 1)) : 6379;
    if (!host || !Number.isInteger(port) || port <= 0 || port > 65_535)
      throw new Error(`REDIS_URL: not a host:port in the cluster's node list: "${hp}"`);
    return { host, port };
  });
  return { cluster: true, tls: m[1] === "rediss", nodes, username, password };
}

/**
 * True when `url` names a user or a password (`redis://:pw@…`, `redis://user:pw@…`, `rediss://…`, the cluster
 * forms). A Redis without authentication lets anyone who reaches it rewrite the policy the replicas enforce and
 * the usage they bill: each plane warns at start when its URL carries none (docs/deployment.md).
 */
export function redisUrlHasCredentials(url: string): boolean {
  const cluster = parseClusterUrl(url);
  if (cluster !== null) return Boolean(cluster.username || cluster.password);
  try {
    const u = new URL(url.trim());
    return u.username !== "" || u.password !== "";
  } catch {
    return false;
  }
}

/** The URL without its credentials, for a log line. */
export function redactRedisUrl(url: string): string {
  return url.trim().replace(/^([a-z+]+:\/\/)[^@/]*@/i, "$1[credentials]@");
}

/**
 * True for Redis' refusals of the connection's credentials: none given to a server that requires them
 * (NOAUTH), a wrong user or password (WRONGPASS, "invalid password"). Not a transient outage: the process
 * cannot do anything until its configuration changes.
 */
export function isRedisAuthError(err: unknown): boolean {
  const m = (err as Error | undefined)?.message ?? "";
  return /\b(NOAUTH|WRONGPASS)\b|invalid (username-)?password|AUTH <password> called without any password/i.test(m);
}

/**
 * True for the errors a command or a connection meets while Redis is away or coming back (refused or reset
 * connections, a closed connection, ioredis giving up on a command, Redis loading its data): an outage's
 * symptoms, counted in the outage log rather than logged one by one.
 */
export function isRedisUnavailableError(err: unknown): boolean {
  const e = err as Error | undefined;
  if (e?.name === "MaxRetriesPerRequestError") return true;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|Connection is closed|Stream isn't writeable|max retries per request|Command timed out|^LOADING|CLUSTERDOWN|TRYAGAIN/i.test(
    e?.message ?? "",
  );
}

/**
 * Calls `refused` (once) when Redis refuses the credentials of any of `clients` before one of them was ready:
 * a process started with the wrong REDIS_URL says so plainly and stops, instead of retrying forever as if Redis
 * were down. Once a client has been ready, a refusal (a password rotated under a running process) is an outage
 * like any other.
 */
export function onCredentialsRefusedAtStart(clients: readonly Redis[], refused: (err: Error) => void): void {
  let done = false;
  for (const c of clients) {
    c.once("ready", () => void (done = true));
    c.on("error", (err: Error) => {
      if (done || !isRedisAuthError(err)) return;
      done = true;
      refused(err);
    });
  }
}

/** Opens a connection (or a cluster client) for `url` with `options` for every node. */
export function connectRedis(url: string, options: RedisOptions = {}): Redis {
  const target = parseClusterUrl(url);
  if (target === null) return new Redis(url, options);
  const nodeOptions: RedisOptions = {
    ...options,
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
  };
  return openCluster(target.nodes, nodeOptions);
}

function openCluster(nodes: { host: string; port: number }[], nodeOptions: RedisOptions): Redis {
  const cluster = new Cluster(nodes, {
    redisOptions: nodeOptions,
    enableOfflineQueue: nodeOptions.enableOfflineQueue ?? true,
    lazyConnect: nodeOptions.lazyConnect ?? false,
    // A failover moves slots: refresh the map on MOVED and retry the command there.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 200,
    maxRedirections: 16,
  });
  return cluster as unknown as Redis;
}

/**
 * Subscribes `conn` to `channel` once the connection is ready. ioredis (5.8.2 and later, 5.11.1 here) writes a
 * SUBSCRIBE issued while its handshake is in flight (connected, the ready check's INFO not yet sent) before that
 * INFO; Redis refuses the INFO in subscriber mode, the ready check fails, ioredis drops the connection, and the
 * subscription delivers nothing (20 of 20 times in a script that subscribed on "connect"; ioredis issue 2037).
 * A replica that started that way followed the policy feed by its 250 ms poll alone: in 2 of 10 bench:keys runs
 * every revocation took ~240 ms instead of ~40. Waiting for "ready" (or "end": the subscribe then fails as it
 * would have) keeps the offline queue's meaning: a subscriber opened while Redis is down subscribes when it is up.
 */
export async function subscribeWhenReady(conn: Redis, ...channels: string[]): Promise<void> {
  if (conn.status !== "ready")
    await new Promise<void>((resolve) => {
      const done = () => {
        conn.off("ready", done);
        conn.off("end", done);
        resolve();
      };
      conn.on("ready", done);
      conn.on("end", done);
    });
  await conn.subscribe(...channels);
}

/**
 * Where and how a client connects, as plain data a worker thread can receive (a client cannot cross threads):
 * the URL and options it was opened with, or (a client opened elsewhere) what ioredis kept of them. It holds
 * the credentials, so it goes only to postMessage/workerData, never to a log.
 */
export interface RedisConnection {
  url?: string;
  /** a cluster's seed nodes (when no url says them) */
  nodes?: { host: string; port: number }[];
  options: RedisOptions;
}

/** The options worth carrying to another thread: plain values only (ioredis' own callbacks cannot be cloned). */
const CARRIED = [
  "host",
  "port",
  "path",
  "username",
  "password",
  "db",
  "tls",
  "family",
  "keyPrefix",
  "connectTimeout",
  "commandTimeout",
  "maxRetriesPerRequest",
  "enableOfflineQueue",
] as const;
const carried = (o: RedisOptions | undefined): RedisOptions => {
  const out: Record<string, unknown> = {};
  for (const k of CARRIED) if (o?.[k] !== undefined && typeof o[k] !== "function") out[k] = o[k];
  return out as RedisOptions;
};

/** How `redis` (a single server or a cluster client) connects, to open a client like it in another thread. */
export function connectionOf(redis: Redis): RedisConnection {
  if (isCluster(redis)) {
    const c = redis as unknown as {
      startupNodes: ({ host?: string; port?: number } | string | number)[];
      options: { redisOptions?: RedisOptions };
    };
    const nodes = c.startupNodes.map((n) =>
      typeof n === "object" ? { host: n.host ?? "127.0.0.1", port: Number(n.port ?? 6379) } : parseNode(String(n)),
    );
    return { nodes, options: carried(c.options.redisOptions) };
  }
  return { options: carried(redis.options) };
}

const parseNode = (hp: string): { host: string; port: number } => {
  const i = hp.lastIndexOf(":");
  return i < 0 ? { host: hp, port: 6379 } : { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
};

/** Opens a client from a RedisConnection, with `over` on top of its options. */
export function connectFrom(conn: RedisConnection, over: RedisOptions = {}): Redis {
  const options = { ...conn.options, ...over };
  if (conn.url !== undefined) return connectRedis(conn.url, options);
  if (conn.nodes !== undefined) return openCluster(conn.nodes, options);
  return new Redis(options);
}

/** True for a cluster client from connectRedis. */
export const isCluster = (redis: Redis): boolean => (redis as unknown) instanceof Cluster;

/** A second client of the same kind and target (for blocking reads, subscriptions). */
export function duplicateRedis(redis: Redis): Redis {
  return (redis as unknown as { duplicate(): Redis }).duplicate();
}
