import { randomBytes } from "node:crypto";
import type { LookupAddress } from "node:dns";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { seal } from "@modelgate/data-plane";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptDelivery } from "../../control-plane/src/alerts/deliver.ts";
import { checkDestination, isBlocked, type Resolver } from "../../control-plane/src/alerts/destination.ts";
import type { Db } from "../../control-plane/src/db/client.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Issue 25, item 5: webhook SSRF by DNS rebinding. The name was checked when the webhook was added and again
// before each delivery, and then fetch resolved it a third time to connect: a name that resolved publicly twice
// and to 127.0.0.1 on the third lookup reached 127.0.0.1. Now the connection's own lookup checks the addresses it
// connects to. The resolver is injected: no real DNS, and no connection ever leaves this machine (every lookup
// after the first two answers 127.0.0.1, where the test's receiver listens). Also: IPv6 forms that carry an IPv4
// address (NAT64 64:ff9b::/96, 6to4 2002::/16, IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, mapped) passed the
// check.

let database: Awaited<ReturnType<typeof freshDatabase>>;
let prisma: Db;
let receiver: Server;
let port: number;
const received: string[] = [];
const masterKey = randomBytes(32);
// a public address by its range: only ever answered to the two checks, which connect nowhere
const PUBLIC = "198.51.100.7";

beforeAll(async () => {
  database = await freshDatabase("rebind");
  prisma = database.db.prisma;
  receiver = createServer((req, res) => {
    received.push(req.url ?? "");
    res.end("ok");
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  port = (receiver.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  await database?.drop();
});

/** A customer's webhook and one pending delivery to it. */
async function customerDelivery(url: string) {
  const account = await prisma.account.create({ data: { name: `acme-${randomBytes(4).toString("hex")}` } });
  await prisma.alertConfig.create({ data: { id: account.id, accountId: account.id } });
  const webhook = await prisma.alertWebhook.create({
    data: { configId: account.id, url, secretEnc: seal(masterKey, "whsec_test") },
  });
  return prisma.webhookDelivery.create({ data: { webhookId: webhook.id, kind: "test", body: "{}" } });
}

/** Answers `first` for the first `n` lookups, then 127.0.0.1 (rebinding). */
function rebinding(n: number, first = PUBLIC) {
  const calls: string[] = [];
  const resolve: Resolver = (hostname) => {
    calls.push(hostname);
    const address = calls.length <= n ? first : "127.0.0.1";
    return Promise.resolve([{ address, family: address.includes(":") ? 6 : 4 } satisfies LookupAddress]);
  };
  return { resolve, calls };
}

const options = (resolve: Resolver) => ({ masterKey, retryBaseMs: 1_000, maxAttempts: 3, timeoutMs: 5_000, resolve });

describe("webhook deliveries check the address they connect to (issue 25, item 5)", () => {
  it("a name that resolves publicly twice, then to 127.0.0.1, does not reach 127.0.0.1", async () => {
    const url = `http://rebind.test:${port}/hook`;
    const { resolve, calls } = rebinding(2);
    await checkDestination(url, resolve); // adding the webhook: public
    const d = await customerDelivery(url);
    const after = await attemptDelivery(prisma, d.id, options(resolve));
    expect(calls.length).toBe(3); // the delivery's check, then the connection's own lookup
    expect(received).toEqual([]);
    expect(after?.status).toBe("failed"); // refused for good: retrying cannot make it reachable
    expect(after?.lastError).toContain("127.0.0.1");
  });

  it("the connection resolves through that lookup (an operators' webhook, under no address rule, is delivered)", async () => {
    received.length = 0;
    const { resolve, calls } = rebinding(0);
    const config = await prisma.alertConfig.create({ data: { id: "operators" } });
    const webhook = await prisma.alertWebhook.create({
      data: { configId: config.id, url: `http://receiver.test:${port}/ops`, secretEnc: seal(masterKey, "whsec_x") },
    });
    const d = await prisma.webhookDelivery.create({ data: { webhookId: webhook.id, kind: "test", body: "{}" } });
    const after = await attemptDelivery(prisma, d.id, options(resolve));
    expect(after?.status).toBe("delivered");
    expect(calls).toEqual(["receiver.test"]);
    expect(received).toEqual(["/ops"]);
  });

  it("IPv6 forms that carry a private IPv4 address are refused, as literals and as answers", async () => {
    const refused = [
      "64:ff9b::7f00:1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b::127.0.0.1",
      "2002:7f00:1::1",
      "2002:a9fe:a9fe::",
      "::7f00:1",
      "::169.254.169.254",
      "::ffff:0:7f00:1",
      "::ffff:0:169.254.169.254",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "64:ff9b:1::a00:1",
      "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      "fe80::1%lo",
      "169.254.169.254",
      "127.0.0.1",
      "0:0:0:0:0:ffff:0a00:0001",
    ];
    for (const a of refused) expect(isBlocked(a), a).toBe(true);
    for (const a of ["64:ff9b::808:808", "::ffff:8.8.8.8", "2606:4700::1111", "8.8.8.8"])
      expect(isBlocked(a), a).toBe(false);
    for (const a of ["64:ff9b::7f00:1", "2002:7f00:1::1", "::ffff:0:7f00:1", "::7f00:1"]) {
      await expect(checkDestination(`http://[${a}]:${port}/`)).rejects.toThrow(/private or local/);
      const { resolve } = rebinding(99, a);
      await expect(checkDestination(`http://v6.test:${port}/`, resolve)).rejects.toThrow(/private or local/);
    }
  });
});
