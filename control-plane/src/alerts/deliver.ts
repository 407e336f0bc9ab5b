import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { open } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import {
  checkDestination,
  DestinationRefused,
  connectLookup,
  privateAllowed,
  type Resolver,
  systemResolver,
} from "./destination.ts";
import { SIGNATURE_HEADER, sign, TIMESTAMP_HEADER } from "./signature.ts";

// Webhook delivery: each pending delivery is POSTed with its signature; a 2xx delivers it, anything else (a
// status, a timeout, a refused connection) schedules a retry with exponential backoff, up to maxAttempts,
// after which it is failed. Every attempt's outcome is kept on the row: the delivery log.

export interface DeliveryOptions {
  masterKey: Buffer;
  /** first retry after this, then doubling; MODELGATE_WEBHOOK_RETRY_MS, default 30 s */
  retryBaseMs: number;
  /** MODELGATE_WEBHOOK_ATTEMPTS, default 6 (the last about 8 minutes after the first at the default base) */
  maxAttempts: number;
  timeoutMs: number;
  /** how names are resolved (the system's resolver; tests inject their own) */
  resolve?: Resolver;
}

/**
 * One POST, answered with its status. Node's own http(s) rather than fetch: its `lookup` option puts the
 * address check on the connection itself (connectLookup, for customers' webhooks), and a fresh connection each
 * time (no agent) means no pooled socket is reused past that check. Redirects are not followed.
 */
function post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, lookup?: unknown) {
  const target = new URL(url);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = send(
      target,
      {
        method: "POST",
        agent: false,
        headers: { ...headers, "content-length": Buffer.byteLength(body) },
        signal: AbortSignal.timeout(timeoutMs),
        ...(lookup ? { lookup: lookup as never } : {}),
      },
      (res) => {
        res.resume(); // the answer's body is not read, only drained
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export const deliveryOptionsFromEnv = (masterKey: Buffer, env: NodeJS.ProcessEnv = process.env): DeliveryOptions => ({
  masterKey,
  retryBaseMs: positive(env.MODELGATE_WEBHOOK_RETRY_MS, 30_000),
  maxAttempts: positive(env.MODELGATE_WEBHOOK_ATTEMPTS, 6),
  timeoutMs: 10_000,
});

function positive(v: string | undefined, fallback: number): number {
  const n = Number(v);
  return v && Number.isFinite(n) && n > 0 ? n : fallback;
}

/** The operators' alert settings (alerts/runner.ts OPERATORS_CONFIG; repeated here to keep the import one-way). */
const OPERATORS = "operators";

/**
 * How long an attempt holds its delivery: the POST's timeout and a margin. A control plane that stops in the
 * middle of an attempt leaves the delivery to be tried again once this has passed.
 */
export const attemptLeaseMs = (o: DeliveryOptions): number => o.timeoutMs + 5_000;

/**
 * One attempt of one delivery that is due; updates its row and returns it. The attempt first claims the
 * delivery (its next attempt moves past the lease, in one conditional UPDATE), so the delivery loops of every
 * control plane, and a test send, never POST one delivery twice at once: two loops that read the same due row
 * both sent it, and a test send raced its own loop (a receiver got the test alert twice).
 */
export async function attemptDelivery(prisma: Db, id: string, o: DeliveryOptions) {
  const now = Date.now();
  const claimed = await prisma.webhookDelivery.updateMany({
    // due within a second: a new row's time is the database's now(), and hosts' clocks differ by a little; a
    // held row's is a lease (at least 5 s) ahead
    where: { id, status: "pending", nextAttemptAt: { lte: new Date(now + 1_000) } },
    data: { nextAttemptAt: new Date(now + attemptLeaseMs(o)) },
  });
  if (claimed.count === 0) return prisma.webhookDelivery.findUnique({ where: { id } });
  return attemptClaimed(prisma, id, o);
}

/** One attempt of a delivery this caller holds (attemptDelivery claimed it, or it created it held). */
export async function attemptClaimed(prisma: Db, id: string, o: DeliveryOptions) {
  const d = await prisma.webhookDelivery.findUnique({ where: { id }, include: { webhook: true } });
  if (!d || d.status !== "pending") return d;
  const timestamp = Math.floor(Date.now() / 1000);
  let status: number | null = null;
  let error: string | null = null;
  let final = false;
  try {
    const guarded = d.webhook.configId !== OPERATORS && !privateAllowed();
    const resolve = o.resolve ?? systemResolver;
    // a literal address is refused here (a connection to one makes no lookup); a name, by the connection's own lookup
    if (guarded) await checkDestination(d.webhook.url, resolve);
    const secret = open(o.masterKey, d.webhook.secretEnc);
    status = await post(
      d.webhook.url,
      {
        "content-type": "application/json",
        "user-agent": "modelgate-webhooks/1",
        "x-modelgate-event": d.kind,
        "x-modelgate-delivery": d.id,
        [TIMESTAMP_HEADER]: String(timestamp),
        [SIGNATURE_HEADER]: sign(secret, timestamp, d.body),
      },
      d.body,
      o.timeoutMs,
      guarded || o.resolve ? connectLookup(resolve, guarded) : undefined,
    );
    if (status < 200 || status >= 300) error = `HTTP ${status}`;
  } catch (err) {
    error = ((err as Error).message || String(err)).slice(0, 500);
    // an address a customer may not reach does not become reachable by retrying
    final = err instanceof DestinationRefused;
  }
  const attempts = d.attempts + 1;
  if (error === null) {
    return prisma.webhookDelivery.update({
      where: { id },
      data: { status: "delivered", attempts, lastStatus: status, lastError: null, deliveredAt: new Date() },
    });
  }
  const failed = final || attempts >= o.maxAttempts;
  return prisma.webhookDelivery.update({
    where: { id },
    data: {
      status: failed ? "failed" : "pending",
      attempts,
      lastStatus: status,
      lastError: error,
      nextAttemptAt: new Date(Date.now() + o.retryBaseMs * 2 ** (attempts - 1)),
    },
  });
}

/** Attempts every delivery that is due; returns when the next pending one is due (null: none pending). */
export async function deliverDue(prisma: Db, o: DeliveryOptions): Promise<Date | null> {
  const due = await prisma.webhookDelivery.findMany({
    where: { status: "pending", nextAttemptAt: { lte: new Date() } },
    select: { id: true },
    orderBy: { nextAttemptAt: "asc" },
    take: 100,
  });
  await Promise.all(due.map((d) => attemptDelivery(prisma, d.id, o)));
  const next = await prisma.webhookDelivery.findFirst({
    where: { status: "pending" },
    orderBy: { nextAttemptAt: "asc" },
    select: { nextAttemptAt: true },
  });
  return next?.nextAttemptAt ?? null;
}
