import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { seal } from "@modelgate/data-plane";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptDelivery, deliverDue, type DeliveryOptions } from "../../control-plane/src/alerts/deliver.ts";
import { testWebhook } from "../../control-plane/src/alerts/settings.ts";
import type { Db } from "../../control-plane/src/db/client.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// A webhook delivery is POSTed once per attempt, whoever attempts it. Every control plane runs a delivery loop
// over the same due rows, and a test send attempts its own row at once: both read the row as pending and both
// sent it (the console's browser test saw its test alert arrive twice). An attempt now claims its row first.

let database: Awaited<ReturnType<typeof freshDatabase>>;
let prisma: Db;
let receiver: Server;
let url: string;
const received: string[] = [];
const masterKey = randomBytes(32);
const options: DeliveryOptions = { masterKey, retryBaseMs: 60_000, maxAttempts: 3, timeoutMs: 5_000 };

beforeAll(async () => {
  database = await freshDatabase("deliver");
  prisma = database.db.prisma;
  receiver = createServer((req, res) => {
    received.push(String(req.headers["x-modelgate-delivery"]));
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // the operators' webhooks may reach private addresses (alerts/deliver.ts): this receiver is on 127.0.0.1
  await prisma.alertConfig.create({ data: { id: "operators" } });
}, 60_000);

afterAll(async () => {
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  await database?.drop();
});

const webhook = () =>
  prisma.alertWebhook.create({ data: { configId: "operators", url, secretEnc: seal(masterKey, "whsec_test") } });

describe("webhook deliveries", () => {
  it("are POSTed once however many attempts race for one due delivery", async () => {
    const w = await webhook();
    const d = await prisma.webhookDelivery.create({ data: { webhookId: w.id, kind: "budget", body: "{}" } });
    const before = received.length;
    await Promise.all([
      attemptDelivery(prisma, d.id, options),
      attemptDelivery(prisma, d.id, options),
      deliverDue(prisma, options),
      deliverDue(prisma, options),
    ]);
    expect(received.slice(before)).toEqual([d.id]);
    const row = await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: d.id } });
    expect([row.status, row.attempts, row.lastStatus]).toEqual(["delivered", 1, 204]);
  });

  it("send a test alert once while the delivery loops run", async () => {
    const w = await webhook();
    const before = received.length;
    let done = false;
    const loop = async () => {
      while (!done) await deliverDue(prisma, options);
    };
    const loops = [loop(), loop(), loop()];
    try {
      const sent = await testWebhook({ prisma, masterKey, snapshotChanged: () => undefined }, w.id, options);
      expect([sent.status, sent.attempts]).toEqual(["delivered", 1]);
      expect(received.slice(before)).toEqual([sent.id]);
    } finally {
      done = true;
      await Promise.all(loops);
    }
    expect(received.length - before).toBe(1);
  });

  it("leave a held delivery to its holder, and retry one whose holder stopped once the lease has passed", async () => {
    const w = await webhook();
    // held by an attempt that never finished (its control plane stopped): not due until the lease ends
    const d = await prisma.webhookDelivery.create({
      data: { webhookId: w.id, kind: "budget", body: "{}", nextAttemptAt: new Date(Date.now() + 15_000) },
    });
    const before = received.length;
    expect((await attemptDelivery(prisma, d.id, options))?.status).toBe("pending");
    await deliverDue(prisma, options);
    expect(received.length).toBe(before);
    await prisma.webhookDelivery.update({ where: { id: d.id }, data: { nextAttemptAt: new Date(Date.now() - 1) } });
    await deliverDue(prisma, options);
    expect(received.slice(before)).toEqual([d.id]);
  });
});
