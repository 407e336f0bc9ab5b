import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster } from "ioredis";
import { eventually, freePort } from "./processes.ts";

// A Redis Cluster of its own for a test: `masters` masters with one replica each, started from the machine's
// redis-server in cluster mode (nothing kept on disk) and joined with `redis-cli --cluster create`. Ports are
// free ones (each node also needs its port + 10000 for the cluster bus); close() stops them all.

const run = promisify(execFile);

export interface RedisClusterNode {
  port: number;
  proc: ChildProcess;
}

export interface TestRedisCluster {
  /** the nodes' addresses as "127.0.0.1:port", comma-separated: what REDIS_URL takes after redis+cluster:// */
  url: string;
  nodes: RedisClusterNode[];
  /** a client of the whole cluster, for the test's own reads */
  client: Cluster;
  /** the master serving `key`, and a replica of it */
  ownerOf(key: string): Promise<{ master: RedisClusterNode; replica: RedisClusterNode }>;
  close(): Promise<void>;
}

async function clusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const p = await freePort();
    // The bus port must be free too, and a valid port.
    if (p + 10_000 > 65_535 || ports.includes(p)) continue;
    const bus = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(false));
      srv.listen(p + 10_000, "127.0.0.1", () => srv.close(() => resolve(true)));
    });
    if (bus) ports.push(p);
  }
  return ports;
}

export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), "mg-cluster-"));
  const ports = await clusterPorts(masters * 2);
  const nodes: RedisClusterNode[] = ports.map((port) => ({
    port,
    proc: spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        join(dir, `nodes-${port}.conf`),
        "--cluster-node-timeout",
        "1000",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        dir,
      ],
      { stdio: "ignore" },
    ),
  }));
  const close = async () => {
    client?.disconnect();
    await Promise.all(
      nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            if (n.proc.exitCode !== null || n.proc.signalCode !== null) return resolve();
            n.proc.once("exit", () => resolve());
            n.proc.kill("SIGKILL");
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  let client: Cluster | undefined;
  try {
    for (const n of nodes)
      await eventually(
        () =>
          run("redis-cli", ["-p", String(n.port), "ping"]).then(
            (r) => r.stdout.trim(),
            () => "",
          ),
        (s) => s === "PONG",
        10_000,
        50,
      );
    await run("redis-cli", [
      "--cluster",
      "create",
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      "--cluster-replicas",
      "1",
      "--cluster-yes",
    ]);
    for (const n of nodes) {
      await eventually(
        () =>
          run("redis-cli", ["-p", String(n.port), "cluster", "info"]).then(
            (r) => r.stdout,
            () => "",
          ),
        (s) => s.includes("cluster_state:ok"),
        20_000,
        100,
      );
    }
    client = new Cluster(nodes.map((n) => ({ host: "127.0.0.1", port: n.port })));
    client.on("error", () => undefined);
    // Replicas attach after the create returns: wait until every master has its replica.
    const c = client;
    await eventually(
      () => c.cluster("SLOTS") as Promise<unknown[][]>,
      (slots) => slots.length === masters && slots.every((s) => s.length >= 4),
      20_000,
      100,
    );
  } catch (err) {
    await close();
    throw err;
  }
  const byPort = new Map(nodes.map((n) => [n.port, n]));
  return {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`,
    nodes,
    client,
    async ownerOf(key) {
      const slot = Number(await client.cluster("KEYSLOT", key));
      const shards = await client.cluster("SLOTS");
      const shard = shards.find(([from, to]) => slot >= from && slot <= to);
      const [, , master, replica] = shard ?? [];
      if (!master || !replica) throw new Error(`no master with a replica serves slot ${slot}`);
      return { master: byPort.get(master[1])!, replica: byPort.get(replica[1])! };
    },
    close,
  };
}
