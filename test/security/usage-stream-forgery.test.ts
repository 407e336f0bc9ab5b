import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { redisNames, type UsageEvent } from "../../data-plane/src/contract/index.ts";
import { connectRedis } from "../../data-plane/src/redis/connect.ts";
import { parseMasterKey } from "../../data-plane/src/crypto/secret-box.ts";
import { signedEntryFields, usageEntryKey } from "../../data-plane/src/usage/entry-signature.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/script.ts";

// Issue 25, item 4: anyone who could write to Redis minted credit. One XADD of a usage event with cost
// "-1000000000" onto the usage stream raised an account's balance from 1 to 1,001 units: the entry carried no
// proof of origin and the schema took a negative cost. Now the data plane signs each entry (HMAC-SHA256, a key
// derived from the master key), the control plane refuses (acknowledges, records, never settles) what is not
// signed, and the schema refuses negative costs even in a signed entry.

const MODEL = "forge-chat-2025-01-01";
let upstream: MockUpstream;
let gw: Gateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({
    fallback: { text: ["genuine"], usage: { promptTokens: 10, completionTokens: 5 } },
  });
  gw = await startGateway("distributed", {
    replicas: 1,
    config: {
      upstreams: [{ name: "mock", protocol: "openai", baseUrl: upstream.url, apiKey: "test-upstream-key" }],
      models: [{ id: MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: "mock", model: "m" }] }],
    },
  });
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

it("forged, unsigned, mis-signed and altered usage entries leave the balance unchanged; a genuine call still settles", async () => {
  const account = await gw.admin<{ id: string }>("account create", { name: "victim", balance: "1" });
  const { id: keyId, key } = await gw.admin<{ id: string; key: string }>("key create", { account: "victim" });
  const before = await gw.balance("victim");
  expect(before).toBe(1_000_000n);

  const event = (cost: string): UsageEvent => ({
    requestId: `forged-${randomUUID()}`,
    keyId,
    accountId: account.id,
    model: MODEL,
    protocol: "openai",
    upstream: "mock",
    stream: false,
    promptTokens: 1,
    completionTokens: 1,
    reasoningTokens: 0,
    cachedTokens: 0,
    cost,
    status: 200,
    errorCode: null,
    latencyMs: 5,
    ttftMs: null,
    clientIp: null,
    startedAt: new Date().toISOString(),
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    prices: null,
    estimated: false,
    endUser: null,
    tags: [],
  });
  const names = redisNames(gw.cliEnv.MODELGATE_REDIS_PREFIX!);
  const stream = names.usageStream;
  const redis = connectRedis(gw.cliEnv.REDIS_URL!);
  const realKey = usageEntryKey(parseMasterKey(gw.cliEnv.MODELGATE_MASTER_KEY!));
  const forged: UsageEvent[] = [];
  const json = (cost: string) => {
    const e = event(cost);
    forged.push(e);
    return JSON.stringify([e]);
  };
  try {
    const refusedIds = [
      // the exact attack: a credit of 1,000 units, unsigned
      await redis.xadd(stream, "*", "events", json("-1000000000")),
      // a plausible charge, unsigned (the schema would take it: only the signature stops it)
      await redis.xadd(stream, "*", "events", json("250000")),
      // the older one-event form, unsigned
      await redis.xadd(stream, "*", "event", JSON.stringify(event("-1000000000"))),
      // valid-looking signatures: made with another key, and the real key's signature of other bytes
      await redis.xadd(stream, "*", ...signedEntryFields(usageEntryKey(randomBytes(32)), json("-1000000000"))),
      await redis.xadd(stream, "*", "events", json("-1000000000"), "sig", signedEntryFields(realKey, "[]")[3]),
      // a signature over the entry's bytes as a plain SHA-256 HMAC keyed by the master key itself (not the HKDF key)
      await (async () => {
        const body = json("-1000000000");
        const sig = createHmac("sha256", parseMasterKey(gw.cliEnv.MODELGATE_MASTER_KEY!))
          .update(body)
          .digest("base64url");
        return redis.xadd(stream, "*", "events", body, "sig", sig);
      })(),
    ];
    // Even signed with the real key, a negative cost is not an event the schema takes.
    await redis.xadd(stream, "*", ...signedEntryFields(realKey, json("-1000000000")));

    // Every entry is read and acknowledged (the stream empties): none of them moved the balance.
    await eventually(
      () => redis.xlen(stream),
      (len) => len === 0,
      20_000,
      100,
    );
    expect(await gw.balance("victim")).toBe(before);
    // each refused one recorded once (the audit row is written after the acknowledgement)
    await eventually(
      () => gw.prisma!.auditLog.count({ where: { action: "usage.entry_refused" } }),
      (n) => n >= refusedIds.length,
      10_000,
      100,
    );
    const rows = await gw.prisma!.auditLog.findMany({ where: { action: "usage.entry_refused" } });
    expect(rows.map((r) => r.subjectId).sort()).toEqual(refusedIds.map((id) => `${stream} ${id}`).sort());
    // logged once each, by stream id
    const log = gw.procs[0]!.output();
    for (const id of refusedIds) expect(log.split(id!).length - 1, `log lines naming ${id}`).toBe(1);
    expect(log).not.toContain(gw.cliEnv.MODELGATE_MASTER_KEY!);

    // A genuine call through the replica settles after them: the consumer is alive and signed entries pass.
    await waitForKey(gw, key);
    const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const genuine = res.headers.get("x-gateway-request-id")!;
    await eventually(
      () => gw.usage("victim"),
      (rows) => rows.some((r) => r.requestId === genuine),
      20_000,
      100,
    );
    const usage = await gw.usage("victim");
    expect(usage.map((r) => r.requestId)).toEqual([genuine]);
    for (const e of forged) expect(usage.some((r) => r.requestId === e.requestId)).toBe(false);
    // the balance moved by the genuine call's cost alone, and the ledger holds that call's line alone
    expect(await gw.balance("victim")).toBe(before - usage[0]!.costMicro);
    const lines = await gw.prisma!.ledgerEntry.findMany({
      where: { accountId: account.id, kind: { in: ["usage", "correction"] } },
    });
    expect(lines.map((l) => [l.kind, l.calls, l.amountMicro])).toEqual([["usage", 1, -usage[0]!.costMicro]]);
  } finally {
    redis.disconnect();
  }
}, 120_000);
