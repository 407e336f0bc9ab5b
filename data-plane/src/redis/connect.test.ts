import { describe, expect, it } from "vitest";
import { usageShardCount, usageShardFor, usageShards } from "../contract/redis-names.ts";
import {
  connectionOf,
  connectRedis,
  isRedisAuthError,
  isRedisUnavailableError,
  parseClusterUrl,
  redactRedisUrl,
  redisUrlHasCredentials,
} from "./connect.ts";

describe("Redis URLs", () => {
  it("takes credentials from every URL form (user and password, password alone, TLS, cluster)", () => {
    for (const url of [
      "redis://:s3cret@127.0.0.1:6379",
      "redis://modelgate-replica:s3cret@redis:6379/0",
      "rediss://modelgate-replica:s3cret@redis.example:6380",
      "redis+cluster://app:s3cret@10.0.0.1:7000,10.0.0.2:7001",
      "rediss+cluster://:s3cret@10.0.0.1:7000",
    ])
      expect(redisUrlHasCredentials(url), url).toBe(true);
    for (const url of ["redis://127.0.0.1:6379", "rediss://redis:6380", "redis+cluster://10.0.0.1:7000", "nonsense"])
      expect(redisUrlHasCredentials(url), url).toBe(false);
    // what ioredis opens with: user, password and TLS from the URL
    const tls = connectRedis("rediss://modelgate-replica:p%40ss@127.0.0.1:6380/2", { lazyConnect: true });
    expect(tls.options).toMatchObject({ username: "modelgate-replica", password: "p@ss", db: 2, port: 6380 });
    expect(tls.options.tls).toBeTruthy();
    tls.disconnect();
  });

  it("logs a URL without its credentials, and knows Redis' refusals of them", () => {
    expect(redactRedisUrl("redis://user:s3cret@redis:6379")).toBe("redis://[credentials]@redis:6379");
    expect(redactRedisUrl("rediss+cluster://:s3cret@a:1,b:2")).toBe("rediss+cluster://[credentials]@a:1,b:2");
    expect(redactRedisUrl("redis://redis:6379")).toBe("redis://redis:6379");
    expect(isRedisAuthError(new Error("NOAUTH Authentication required."))).toBe(true);
    expect(isRedisAuthError(new Error("WRONGPASS invalid username-password pair or user is disabled."))).toBe(true);
    expect(isRedisAuthError(new Error("ERR invalid password"))).toBe(true);
    expect(isRedisAuthError(new Error("connect ECONNREFUSED 127.0.0.1:6379"))).toBe(false);
    expect(isRedisAuthError(new Error("NOPERM this user has no permissions to run the 'xack' command"))).toBe(false);
    // an outage's symptoms (counted in the outage log), not other failures
    for (const m of ["connect ECONNREFUSED 127.0.0.1:6379", "Connection is closed.", "LOADING Redis is loading"])
      expect(isRedisUnavailableError(new Error(m)), m).toBe(true);
    const retries = Object.assign(new Error("Reached the max retries per request limit"), {
      name: "MaxRetriesPerRequestError",
    });
    expect(isRedisUnavailableError(retries)).toBe(true);
    expect(isRedisUnavailableError(new Error("NOGROUP No such key"))).toBe(false);
    expect(isRedisUnavailableError(new Error('relation "usage_logs" does not exist'))).toBe(false);
  });

  it("reads a cluster's seed nodes, credentials and TLS; a single-server URL is left to ioredis", () => {
    expect(parseClusterUrl("redis://127.0.0.1:6379")).toBeNull();
    expect(parseClusterUrl("redis+cluster://10.0.0.1:7000,10.0.0.2:7001,redis-3")).toEqual({
      cluster: true,
      tls: false,
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
        { host: "redis-3", port: 6379 },
      ],
      username: undefined,
      password: undefined,
    });
    expect(parseClusterUrl("rediss+cluster://app:p%40ss@[::1]:7000/0")).toEqual({
      cluster: true,
      tls: true,
      nodes: [{ host: "::1", port: 7000 }],
      username: "app",
      password: "p@ss",
    });
    expect(() => parseClusterUrl("redis+cluster://a:70000")).toThrow(/host:port/);
  });
});

describe("usage stream shards", () => {
  it("keeps the single stream's name for shard 0, tags the others apart, and refuses a bad count", () => {
    expect(usageShards("mg:", 3)).toEqual(["mg:usage", "mg:usage:{usage-1}", "mg:usage:{usage-2}"]);
    expect(usageShardCount({})).toBe(1);
    expect(usageShardCount({ MODELGATE_USAGE_SHARDS: "8" })).toBe(8);
    expect(() => usageShardCount({ MODELGATE_USAGE_SHARDS: "0" })).toThrow(/1 to 256/);
    for (const bad of ["1e1", "0x10", "8.0", "-8", "257", "eight"])
      expect(() => usageShardCount({ MODELGATE_USAGE_SHARDS: bad }), bad).toThrow(/1 to 256/);
    expect(usageShardCount({ MODELGATE_USAGE_SHARDS: " 4 " })).toBe(4);
  });

  it("puts a replica on a stable shard, and replicas across all of them", () => {
    expect(usageShardFor("host:1:8080", 4)).toBe(usageShardFor("host:1:8080", 4));
    const used = new Set(Array.from({ length: 64 }, (_, i) => usageShardFor(`host:${1000 + i}:8080`, 4)));
    expect(used).toEqual(new Set([0, 1, 2, 3]));
  });
});

describe("a connection carried to another thread (the policy load worker)", () => {
  // Built lazily (and on loopback addresses only): nothing connects; what matters is what the worker would be handed (plain, cloneable data).
  it("carries a single server's address, credentials and options, and no callbacks", () => {
    const redis = connectRedis("redis://app:s3cret@127.0.0.1:6390/2", {
      lazyConnect: true,
      commandTimeout: 1_000,
      maxRetriesPerRequest: 1,
    });
    const conn = connectionOf(redis);
    expect(conn.options).toMatchObject({
      host: "127.0.0.1",
      port: 6390,
      username: "app",
      password: "s3cret",
      db: 2,
      commandTimeout: 1_000,
      maxRetriesPerRequest: 1,
    });
    expect(structuredClone(conn)).toEqual(conn);
    redis.disconnect();
  });

  it("carries a cluster's seed nodes and its nodes' options", () => {
    const redis = connectRedis("redis+cluster://app:pw@127.0.0.1:7000,127.0.0.2:7001", { lazyConnect: true });
    const conn = connectionOf(redis);
    expect(conn.nodes).toEqual([
      { host: "127.0.0.1", port: 7000 },
      { host: "127.0.0.2", port: 7001 },
    ]);
    expect(conn.options).toMatchObject({ username: "app", password: "pw" });
    expect(structuredClone(conn)).toEqual(conn);
    redis.disconnect();
  });
});
