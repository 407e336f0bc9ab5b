import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BudgetCalendar } from "../../../data-plane/src/billing/periods.ts";
import type { UsageEvent } from "../../../data-plane/src/contract/usage.ts";
import { AlertRunner } from "../../../control-plane/src/alerts/runner.ts";
import { verify } from "../../../control-plane/src/alerts/signature.ts";
import { settleUsageBatch } from "../../../control-plane/src/usage/settle.ts";
import { usageEvent } from "../../helpers/usage-event.ts";
import { eventually } from "../../helpers/processes.ts";
import { type Client, customer, operatorClient, startHarness, type Harness } from "./harness.ts";

// Alerts end to end in the control plane: thresholds of a budget fire once per period (a real local HTTP
// receiver checks every signature), a 500 is retried with backoff, the delivery log and the fired events are
// in GraphQL, the same alerts are mailed through the outbox, a new period fires again; balance and expiring-key
// alerts fire once. Evaluation runs as in production: after settlement batches, and on demand (the timer's job).

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
}

/** A webhook receiver: answers with the queued statuses (then 200), records every request. */
class Receiver {
  readonly requests: Received[] = [];
  statuses: number[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];
  private server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.writeHead(this.statuses.shift() ?? 200).end();
        for (const w of this.waiters.filter((w) => this.requests.length >= w.n)) w.resolve();
        this.waiters = this.waiters.filter((w) => this.requests.length < w.n);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/modelgate`;
  }

  /** Resolves once `n` requests have arrived in all. */
  received(n: number): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

let h: Harness;
let ops: Client;
let a: Awaited<ReturnType<typeof customer>>;
let keyId: string;
let runner: AlertRunner;
// The budget clock is the wall clock plus an offset the test moves (as MODELGATE_TEST_CLOCK_FILE does).
let offset = 0;
const calendar = new BudgetCalendar(() => Date.now() + offset);
const receiver = new Receiver();
let secret: string;
let webhookId: string;
let seq = 0;

const body = (r: Received) =>
  JSON.parse(r.body) as {
    id: string | null;
    type: string;
    message: string;
    data: { threshold?: number; period?: string };
  };
const expectSigned = (r: Received) => {
  expect(r.headers["content-type"]).toBe("application/json");
  expect(
    verify(secret, String(r.headers["x-modelgate-timestamp"]), r.body, String(r.headers["x-modelgate-signature"])),
  ).toBe(true);
  // and a tampered body does not verify
  expect(
    verify(
      secret,
      String(r.headers["x-modelgate-timestamp"]),
      `${r.body} `,
      String(r.headers["x-modelgate-signature"]),
    ),
  ).toBe(false);
};

/** Settles one call of `micro` made now (wall clock, as data planes report), then runs what settlement triggers. */
async function spend(micro: number): Promise<void> {
  const e: UsageEvent = {
    ...usageEvent(++seq),
    requestId: `alert-${seq}`,
    accountId: a.accountId,
    keyId,
    cost: String(micro),
    startedAt: new Date().toISOString(),
  };
  expect(await settleUsageBatch(h.db, [e], calendar)).toBe(1);
  runner.settled([a.accountId]);
  await runner.idle();
}

beforeAll(async () => {
  h = await startHarness("gql_alerts");
  await receiver.start();
  const delivery = { masterKey: h.app.masterKey, retryBaseMs: 50, maxAttempts: 3, timeoutMs: 5_000 };
  runner = new AlertRunner({
    prisma: h.app.prisma,
    mail: h.app.mail,
    calendar,
    delivery,
    logger: pino({ level: "silent" }),
    intervalMs: 3_600_000,
  });
  h.app.alerts = { runner, delivery };
  ops = await operatorClient(h);
  a = await customer(h, ops, "Alerted");
  keyId = (await a.client.gql(`mutation { createApiKey(input: { name: "svc" }) { apiKey { id } } }`)).createApiKey
    .apiKey.id;
});

afterAll(async () => {
  await runner?.stop();
  await receiver.close();
  await h?.close();
});

describe("alerts", () => {
  it("configures thresholds, e-mail and a webhook whose secret is shown once, and test-sends a signed alert", async () => {
    await a.client.gql(`mutation { setAccountBudgets(input: { daily: "0.01" }) { id } }`);
    const settings = await a.client.gql(
      `mutation { setAlertSettings(input: { percents: [100, 50, 80, 50], emails: ["alerts@alerted.test"] }) { percents emails breakerOpen } }`,
    );
    expect(settings.setAlertSettings).toEqual({
      percents: [50, 80, 100],
      emails: ["alerts@alerted.test"],
      breakerOpen: false,
    });
    // circuit breakers are the operators' concern
    expect(await a.client.code(`mutation { setAlertSettings(input: { breakerOpen: true }) { breakerOpen } }`)).toBe(
      "BAD_USER_INPUT",
    );
    expect(
      await a.client.code(
        `mutation { setAlertSettings(operators: true, input: { breakerOpen: true }) { breakerOpen } }`,
      ),
    ).toBe("FORBIDDEN");
    expect(await a.client.code(`mutation { addAlertWebhook(url: "ftp://example.com/x") { secret } }`)).toBe(
      "BAD_USER_INPUT",
    );
    // a customer's webhook may not point into the operator's network (loopback, private, link-local, metadata)…
    for (const u of [
      receiver.url,
      "http://10.1.2.3/x",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]:8080/x",
      "http://[::ffff:192.168.0.1]/x",
    ]) {
      expect(await a.client.code(`mutation($u: String!) { addAlertWebhook(url: $u) { secret } }`, { u })).toBe(
        "BAD_USER_INPUT",
      );
    }
    // …unless the operator allows it (an on-premises receiver; this test's receiver on 127.0.0.1)
    process.env.MODELGATE_WEBHOOK_ALLOW_PRIVATE = "1";
    const created = await a.client.gql(
      `mutation($u: String!) { addAlertWebhook(url: $u) { secret webhook { id url } } }`,
      { u: receiver.url },
    );
    secret = created.addAlertWebhook.secret;
    webhookId = created.addAlertWebhook.webhook.id;
    expect(secret).toMatch(/^whsec_/);
    const listed = await a.client.gql(`{ alertSettings { webhooks { id url } } }`);
    expect(JSON.stringify(listed)).not.toContain(secret);

    const sent = await a.client.gql(
      `mutation($id: ID!) { testAlertWebhook(id: $id) { status attempts lastStatus kind } }`,
      { id: webhookId },
    );
    expect(sent.testAlertWebhook).toEqual({ status: "delivered", attempts: 1, lastStatus: 200, kind: "test" });
    expect(receiver.requests).toHaveLength(1);
    expectSigned(receiver.requests[0]!);
    expect(body(receiver.requests[0]!).type).toBe("test");
    expect(receiver.requests[0]!.headers["x-modelgate-event"]).toBe("test");
  });

  it("fires 50% of the daily budget once, retries the receiver's 500 with backoff, and logs the delivery", async () => {
    receiver.statuses = [500];
    await spend(6_000); // 60% of 0.01
    await receiver.received(3); // the first attempt (500) and its retry
    const [first, retry] = receiver.requests.slice(1);
    for (const r of [first!, retry!]) expectSigned(r);
    expect(retry!.body).toBe(first!.body);
    expect(retry!.headers["x-modelgate-delivery"]).toBe(first!.headers["x-modelgate-delivery"]);
    expect(body(first!)).toMatchObject({ type: "budget", data: { threshold: 50, period: "day" } });
    expect(body(first!).message).toContain("60% of its daily budget");
    const log = await eventually(
      () => a.client.gql(`{ webhookDeliveries(first: 10) { kind status attempts lastStatus lastError } }`),
      (d) => d.webhookDeliveries[0]?.status === "delivered",
    );
    expect(log.webhookDeliveries[0]).toEqual({
      kind: "budget",
      status: "delivered",
      attempts: 2,
      lastStatus: 200,
      lastError: null,
    });
  });

  it("does not fire again in the same period; crossing 80 and 100 at once sends the highest", async () => {
    await spend(1_000); // 70%: nothing new
    runner.evaluateAll();
    await runner.idle();
    expect(receiver.requests).toHaveLength(3);
    await spend(4_000); // 110%
    await receiver.received(4);
    expect(body(receiver.requests[3]!).data.threshold).toBe(100);
    runner.evaluateAll();
    await runner.idle();
    expect(receiver.requests).toHaveLength(4);
    const events = await a.client.gql(`{ alertEvents { kind dedupeKey } }`);
    expect(events.alertEvents.map((e: { dedupeKey: string }) => e.dedupeKey.split(":").pop()).sort()).toEqual([
      "100",
      "50",
      "80",
    ]);
  });

  it("fires again in the next period", async () => {
    offset += 86_400_000;
    await spend(5_000);
    await receiver.received(5);
    expect(body(receiver.requests[4]!)).toMatchObject({ type: "budget", data: { threshold: 50 } });
    expect((await a.client.gql(`{ alertEvents { kind } }`)).alertEvents).toHaveLength(4);
  });

  it("mails every alert through the outbox", async () => {
    const mails = await h.outbox("alerts@alerted.test");
    expect(mails).toHaveLength(3); // 50%, 100%, next day's 50% (test sends are not mailed)
    expect(mails[0]!.subject).toContain("Alerted");
    expect(mails[0]!.text).toContain("daily budget");
  });

  it("fires a low balance once until the next top-up, and a key about to expire once", async () => {
    await a.client.gql(
      `mutation { setAlertSettings(input: { balanceBelow: "99.99", keyExpiryDays: 7 }) { balanceBelow keyExpiryDays } }`,
    );
    await a.client.gql(
      `mutation($e: DateTime!) { createApiKey(input: { name: "soon", expiresAt: $e }) { apiKey { id } } }`,
      { e: new Date(Date.now() + 3 * 86_400_000).toISOString() },
    );
    runner.evaluateAll();
    await runner.idle();
    await receiver.received(7);
    expect(
      receiver.requests
        .slice(5)
        .map((r) => body(r).type)
        .sort(),
    ).toEqual(["balance", "key_expiring"]);
    runner.evaluateAll();
    await runner.idle();
    expect(receiver.requests).toHaveLength(7);
  });

  it("refuses to deliver to a private address once the operator no longer allows it, without retrying", async () => {
    delete process.env.MODELGATE_WEBHOOK_ALLOW_PRIVATE;
    const before = receiver.requests.length;
    const sent = await a.client.gql(`mutation($id: ID!) { testAlertWebhook(id: $id) { status attempts lastError } }`, {
      id: webhookId,
    });
    expect(sent.testAlertWebhook).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: expect.stringContaining("private or local address"),
    });
    expect(receiver.requests).toHaveLength(before);
    process.env.MODELGATE_WEBHOOK_ALLOW_PRIVATE = "1";
  });

  it("keeps other accounts out", async () => {
    const b = await customer(h, ops, "Other");
    expect(await b.client.gql(`{ webhookDeliveries { id } alertEvents { id } }`)).toEqual({
      webhookDeliveries: [],
      alertEvents: [],
    });
    expect(await b.client.code(`mutation($id: ID!) { testAlertWebhook(id: $id) { id } }`, { id: webhookId })).toBe(
      "NOT_FOUND",
    );
    expect(await b.client.code(`{ alertSettings(accountId: "${a.accountId}") { percents } }`)).toBe("FORBIDDEN");
  });
});
