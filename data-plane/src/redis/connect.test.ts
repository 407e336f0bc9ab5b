import { describe, expect, it } from "vitest";
import { usageShardCount, usageShardFor, usageShards } from "../contract/redis-names.ts";
import { connectionOf, connectRedis, parseClusterUrl } from "./connect.ts";

describe("Redis URLs", () => {
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
