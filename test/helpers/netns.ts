import { execFileSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";

// Hosts of their own on one machine: each "host" is a Linux network namespace joined to this one by a veth
// pair, so a process started in it has its own loopback and interfaces and reaches the machine's services
// only across the veth, as a process on another host would. The machine's Postgres and Redis listen on
// 127.0.0.1 only, so each service is reached through a TCP forwarder on a hub address (a /32 on this
// namespace's loopback, routed from every namespace through its veth): the bytes cross the veth both ways.
// Needs root and `ip` (iproute2); every name and subnet is random per run, and close() removes them all.

export interface NetHost {
  /** the namespace's name (for `ip netns exec`) */
  name: string;
  /** the namespace's address, where this namespace reaches what runs in it */
  address: string;
  /** the command prefix that runs a program in the namespace */
  prefix: string[];
}

export interface Network {
  /** the hub address every namespace reaches this namespace at */
  hub: string;
  hosts: NetHost[];
  /** forwards hub:<returned port> to 127.0.0.1:<port> in this namespace; what crosses is counted */
  forward(port: number): Promise<number>;
  /** bytes carried by the forwarders so far, both directions */
  bytes(): number;
  close(): Promise<void>;
}

const ip = (...args: string[]): void => void execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

export async function startNetwork(count: number): Promise<Network> {
  const tag = randomBytes(3).toString("hex");
  const octet = randomInt(100, 250); // 10.<octet>.0.0/16 for this run
  const hub = `10.${octet}.0.1`;
  const hosts: NetHost[] = [];
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  let carried = 0;
  const close = async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    // Deleting a namespace deletes its end of the veth pair, and with it the other end.
    for (const h of hosts) {
      try {
        ip("netns", "del", h.name);
      } catch {
        /* already gone */
      }
    }
    try {
      ip("addr", "del", `${hub}/32`, "dev", "lo");
    } catch {
      /* never added */
    }
  };
  try {
    ip("addr", "add", `${hub}/32`, "dev", "lo");
    for (let i = 1; i <= count; i++) {
      const name = `mg${tag}n${i}`;
      const outer = `mg${tag}h${i}`; // ≤ 15 characters, the kernel's limit for interface names
      const inner = `mg${tag}i${i}`;
      const host: NetHost = { name, address: `10.${octet}.${i}.2`, prefix: ["ip", "netns", "exec", name] };
      ip("netns", "add", name);
      hosts.push(host);
      ip("link", "add", outer, "type", "veth", "peer", "name", inner);
      ip("link", "set", inner, "netns", name);
      ip("addr", "add", `10.${octet}.${i}.1/30`, "dev", outer);
      ip("link", "set", outer, "up");
      ip("netns", "exec", name, "ip", "link", "set", "lo", "up");
      ip("netns", "exec", name, "ip", "addr", "add", `${host.address}/30`, "dev", inner);
      ip("netns", "exec", name, "ip", "link", "set", inner, "up");
      ip("netns", "exec", name, "ip", "route", "add", "default", "via", `10.${octet}.${i}.1`);
    }
  } catch (err) {
    await close();
    throw new Error(`cannot build the test network (needs root and iproute2): ${(err as Error).message}`);
  }
  return {
    hub,
    hosts,
    bytes: () => carried,
    async forward(port) {
      const server = createServer((inbound) => {
        const outbound = connect(port, "127.0.0.1");
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => {
            inbound.destroy();
            outbound.destroy();
          });
        }
        inbound.on("data", (d: Buffer) => (carried += d.length));
        outbound.on("data", (d: Buffer) => (carried += d.length));
        inbound.pipe(outbound).pipe(inbound);
      });
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, hub, () => resolve());
      });
      return (server.address() as { port: number }).port;
    },
    close,
  };
}
