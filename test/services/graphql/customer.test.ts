import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTwoTenants, type Tenant } from "../../helpers/graphql-tenants.ts";
import { Client, customer, type Harness } from "./harness.ts";

let h: Harness;
let ops: Client;
let a: Tenant;
let b: Tenant;
let keyA: string;
let keyB: string;
const MODEL = "acme-chat-2025-01-01";
const MODEL2 = "acme-think-2025-02-01";

async function usage(
  accountId: string,
  apiKeyId: string | null,
  rows: { model: string; at: Date; status?: number; prompt?: number; cost?: bigint }[],
) {
  await h.app.prisma.usageLog.createMany({
    data: rows.map((r) => ({
      requestId: randomUUID(),
      accountId,
      apiKeyId,
      model: r.model,
      protocol: "openai",
      status: r.status ?? 200,
      promptTokens: r.prompt ?? 100,
      completionTokens: 50,
      costMicro: r.cost ?? 1_000n,
      latencyMs: 20,
      startedAt: r.at,
    })),
  });
}

beforeAll(async () => {
  ({ h, ops, a, b } = await startTwoTenants("gql_customer"));
  keyA = a.apiKey.id;
  keyB = b.apiKey.id;
  await ops.gql(
    `mutation { upsertModel(input: { id: "${MODEL}", displayName: "Acme Chat", inputPrice: "0.15", outputPrice: "0.6" }) { id } }`,
  );
  await ops.gql(
    `mutation { upsertModel(input: { id: "${MODEL2}", reasoning: true, inputPrice: "3", outputPrice: "15", cachedInputPrice: "0.3" }) { id } }`,
  );
});
afterAll(async () => {
  await h?.close();
});

describe("API keys", () => {
  it("creates (value once), lists, views, updates restrictions and revokes", async () => {
    const before = h.snapshotChanges();
    const created = await a.client.gql(
      `mutation($i: ApiKeyRestrictionsInput!) { createApiKey(input: $i) { key apiKey { id name prefix state quotaCap allowedModels ipAllowlist rpm expiresAt } } }`,
      {
        i: {
          name: "svc",
          quotaCap: "12.5",
          allowedModels: [MODEL],
          ipAllowlist: ["10.0.0.0/8", "2001:db8::/32"],
          rpm: 60,
        },
      },
    );
    const { key, apiKey } = created.createApiKey;
    expect(key).toMatch(/^sk-mg-[A-Za-z0-9]{40}$/);
    expect(apiKey).toMatchObject({
      name: "svc",
      state: "active",
      quotaCap: "12.5",
      allowedModels: [MODEL],
      rpm: 60,
      expiresAt: null,
    });
    expect(key.startsWith(apiKey.prefix.split("…")[0])).toBe(true);
    expect(h.snapshotChanges()).toBeGreaterThan(before);
    const row = await h.app.prisma.apiKey.findUniqueOrThrow({ where: { id: apiKey.id } });
    expect(JSON.stringify(row, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))).not.toContain(key);

    const list = (await a.client.gql(`{ apiKeys { id name } }`)).apiKeys as { name: string }[];
    expect(list.map((k) => k.name)).toEqual(["a-prod", "svc"]);
    const viewed = await a.client.gql(`query($id: ID!) { apiKey(id: $id) { name quotaCapMicro } }`, { id: apiKey.id });
    expect(viewed.apiKey).toEqual({ name: "svc", quotaCapMicro: "12500000" });

    const upd = await a.client.gql(
      `mutation($id: ID!) { updateApiKey(id: $id, input: { name: "svc2", quotaCap: null, rpm: null, ipAllowlist: [] }) { name quotaCap rpm ipAllowlist allowedModels } }`,
      { id: apiKey.id },
    );
    expect(upd.updateApiKey).toEqual({
      name: "svc2",
      quotaCap: null,
      rpm: null,
      ipAllowlist: [],
      allowedModels: [MODEL],
    });
    for (const bad of [
      { ipAllowlist: ["10.0.0.0/33"] },
      { allowedModels: ["acme-chat"] },
      { quotaCap: "-1" },
      { rpm: 0 },
      { name: "" },
    ]) {
      expect(
        await a.client.code(
          `mutation($id: ID!, $i: ApiKeyRestrictionsInput!) { updateApiKey(id: $id, input: $i) { id } }`,
          { id: apiKey.id, i: bad },
        ),
      ).toBe("BAD_USER_INPUT");
    }
    const rev = await a.client.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { status state revokedAt } }`, {
      id: apiKey.id,
    });
    expect(rev.revokeApiKey.status).toBe("revoked");
    expect(rev.revokeApiKey.state).toBe("revoked");
    expect(
      await a.client.code(`mutation($id: ID!) { updateApiKey(id: $id, input: { name: "x" }) { id } }`, {
        id: apiKey.id,
      }),
    ).toBe("BAD_USER_INPUT");
  });

  it("trial keys carry the operator's quota and expiry; the customer cannot lift them", async () => {
    const expires = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const t = await ops.gql(
      `mutation($e: DateTime) { createCustomer(input: { name: "Trialco", kind: trial, trialQuota: "2", trialExpiresAt: $e, owner: { email: "t@trialco.example", password: "trial-password-1" } }) { account { id trialPolicy { quota expiresAt } } } }`,
      { e: expires },
    );
    expect(t.createCustomer.account.trialPolicy).toEqual({ quota: "2", expiresAt: expires });
    const tc = new Client(h.url);
    await tc.login("t@trialco.example", "trial-password-1");
    const k = await tc.gql(`mutation { createApiKey(input: { name: "try" }) { apiKey { id quotaCap expiresAt } } }`);
    expect(k.createApiKey.apiKey).toMatchObject({ quotaCap: "2", expiresAt: expires });
    const id = k.createApiKey.apiKey.id;
    expect(await tc.code(`mutation { createApiKey(input: { quotaCap: "3" }) { key } }`)).toBe("BAD_USER_INPUT");
    expect(
      await tc.code(`mutation($id: ID!) { updateApiKey(id: $id, input: { quotaCap: null }) { id } }`, { id }),
    ).toBe("BAD_USER_INPUT");
    expect(
      await tc.code(`mutation($id: ID!) { updateApiKey(id: $id, input: { expiresAt: null }) { id } }`, { id }),
    ).toBe("BAD_USER_INPUT");
    expect(
      await tc.code(`mutation($id: ID!, $e: DateTime) { updateApiKey(id: $id, input: { expiresAt: $e }) { id } }`, {
        id,
        e: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      }),
    ).toBe("BAD_USER_INPUT");
    // lowering is fine
    const low = await tc.gql(`mutation($id: ID!) { updateApiKey(id: $id, input: { quotaCap: "1.5" }) { quotaCap } }`, {
      id,
    });
    expect(low.updateApiKey.quotaCap).toBe("1.5");
    // the operator moves the policy: every key follows
    const later = new Date(Date.now() + 10 * 86_400_000).toISOString();
    await ops.gql(
      `mutation($a: ID!, $e: DateTime!) { setTrialPolicy(accountId: $a, quota: "4", expiresAt: $e) { id } }`,
      {
        a: t.createCustomer.account.id,
        e: later,
      },
    );
    expect((await tc.gql(`query($id: ID!) { apiKey(id: $id) { quotaCap expiresAt } }`, { id })).apiKey).toEqual({
      quotaCap: "4",
      expiresAt: later,
    });
  });
});

describe("authorisation matrix", () => {
  it("customer A never sees or touches B's keys, usage, wallet or exports", async () => {
    await usage(b.accountId, keyB, [{ model: MODEL, at: new Date() }]);
    const bExport = (await b.client.gql(`mutation { startExport(format: CSV) { id } }`)).startExport.id;
    const A = a.client;
    // by id: NOT_FOUND (no existence oracle)
    expect(await A.code(`query($id: ID!) { apiKey(id: $id) { id } }`, { id: keyB })).toBe("NOT_FOUND");
    expect(await A.code(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: keyB })).toBe("NOT_FOUND");
    expect(
      await A.code(`mutation($id: ID!) { updateApiKey(id: $id, input: { name: "pwn" }) { id } }`, { id: keyB }),
    ).toBe("NOT_FOUND");
    expect(await A.code(`query($id: ID!) { export(id: $id) { id } }`, { id: bExport })).toBe("NOT_FOUND");
    // by account: FORBIDDEN
    for (const q of [
      `query($a: ID) { apiKeys(accountId: $a) { id } }`,
      `query($a: ID) { usage(accountId: $a) { nodes { id } } }`,
      `query($a: ID) { usageStats(accountId: $a) { total { requests } } }`,
      `query($a: ID) { wallet(accountId: $a) { balance } }`,
      `query($a: ID) { ledger(accountId: $a) { nodes { id } } }`,
      `query($a: ID) { exports(accountId: $a) { id } }`,
      `query($a: ID) { models(accountId: $a) { id } }`,
      `query($a: ID) { account(accountId: $a) { id } }`,
      `mutation($a: ID) { createApiKey(accountId: $a, input: {}) { key } }`,
      `mutation($a: ID) { startExport(accountId: $a, format: CSV) { id } }`,
      `mutation($a: ID) { createInvitation(accountId: $a, email: "spy@example.com") { token } }`,
    ]) {
      expect(await A.code(q, { a: b.accountId }), q).toBe("FORBIDDEN");
    }
    // filters cannot reach across either: B's key id in A's usage filter finds nothing of B's
    const u = await A.gql(`query($k: ID) { usage(filter: { apiKeyId: $k }) { nodes { id } } }`, { k: keyB });
    expect(u.usage.nodes).toEqual([]);
    // A's own views contain nothing of B
    expect(((await A.gql(`{ apiKeys { id } }`)).apiKeys as { id: string }[]).map((k) => k.id)).not.toContain(keyB);
    // the download route as well
    const dl = await fetch(`${h.url}/api/exports/${bExport}/download`, { headers: { cookie: A.cookie! } });
    expect(dl.status).toBe(404);
    // operator-only operations
    for (const q of [
      `{ accounts { total } }`,
      `{ users { id } }`,
      `{ upstreams { id } }`,
      `{ catalogModels { id } }`,
      `mutation { topUp(accountId: "${a.accountId}", amount: "1000") { balance } }`,
      `mutation { setPriceContract(input: { accountId: "${a.accountId}", modelId: "${MODEL}", inputPrice: "0", outputPrice: "0" }) { id } }`,
      `mutation { setAccountLimits(accountId: "${a.accountId}", rpm: 100000) { id } }`,
    ]) {
      expect(await A.code(q), q).toBe("FORBIDDEN");
    }
    // anonymous: UNAUTHENTICATED everywhere
    const anon = new Client(h.url);
    expect(await anon.code(`{ wallet { balance } }`)).toBe("UNAUTHENTICATED");
    expect(await anon.code(`{ accounts { total } }`)).toBe("UNAUTHENTICATED");
    expect((await fetch(`${h.url}/api/exports/${bExport}/download`)).status).toBe(401);
  });

  it("operators see any account by id", async () => {
    const r = await ops.gql(
      `query($a: ID) { apiKeys(accountId: $a) { id } account(accountId: $a) { name members { email } } }`,
      {
        a: b.accountId,
      },
    );
    expect(r.apiKeys.map((k: { id: string }) => k.id)).toContain(keyB);
    expect(r.account.members[0].email).toBe(b.email);
    expect(await ops.code(`{ apiKeys { id } }`)).toBe("BAD_USER_INPUT"); // an operator must name the account
  });
});

describe("wallet, usage, statistics, models", () => {
  it("wallet and ledger with top-ups and adjustments", async () => {
    await ops.gql(`mutation($a: ID!) { topUp(accountId: $a, amount: "0.1", note: "promo") { balance } }`, {
      a: a.accountId,
    });
    await ops.gql(`mutation($a: ID!) { topUp(accountId: $a, amount: "0.2") { balance } }`, { a: a.accountId });
    const adj = await ops.gql(
      `mutation($a: ID!) { adjustBalance(accountId: $a, amount: "-0.05", note: "fix") { balance balanceMicro } }`,
      {
        a: a.accountId,
      },
    );
    expect(adj.adjustBalance).toEqual({ balance: "100.25", balanceMicro: "100250000" });
    expect(
      await ops.code(`mutation($a: ID!) { topUp(accountId: $a, amount: "-1") { balance } }`, { a: a.accountId }),
    ).toBe("BAD_USER_INPUT");
    const p1 = await a.client.gql(
      `{ wallet { balance currency } ledger(first: 2) { nodes { kind amount balanceAfter note } hasNextPage endCursor } }`,
    );
    expect(p1.wallet).toEqual({ balance: "100.25", currency: "USD" });
    expect(p1.ledger.nodes).toEqual([
      { kind: "adjustment", amount: "-0.05", balanceAfter: "100.25", note: "fix" },
      { kind: "topup", amount: "0.2", balanceAfter: "100.3", note: null },
    ]);
    expect(p1.ledger.hasNextPage).toBe(true);
    const p2 = await a.client.gql(
      `query($c: String) { ledger(first: 5, after: $c) { nodes { amount } hasNextPage } }`,
      { c: p1.ledger.endCursor },
    );
    expect(p2.ledger.nodes.map((n: { amount: string }) => n.amount)).toEqual(["0.1", "100"]);
    expect(p2.ledger.hasNextPage).toBe(false);
  });

  it("usage log: cursor pagination and filters", async () => {
    const base = Date.parse("2026-03-01T00:00:00Z");
    const rows = Array.from({ length: 30 }, (_, i) => ({
      model: i % 3 === 0 ? MODEL2 : MODEL,
      at: new Date(base + i * 3600_000),
      status: i % 10 === 9 ? 429 : 200,
      cost: 2_500n,
    }));
    await usage(a.accountId, keyA, rows);
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const r: {
        usage: {
          nodes: { startedAt: string; amount: string; totalTokens: number }[];
          hasNextPage: boolean;
          endCursor: string;
        };
      } = await a.client.gql(
        `query($f: UsageFilter, $c: String) { usage(filter: $f, first: 7, after: $c) { nodes { startedAt amount totalTokens } hasNextPage endCursor } }`,
        { f: { from: "2026-03-01T00:00:00Z", to: "2026-03-02T06:00:00Z" }, c: after },
      );
      seen.push(...r.usage.nodes.map((n) => n.startedAt));
      expect(r.usage.nodes[0]?.amount).toBe("0.0025");
      if (!r.usage.hasNextPage) break;
      after = r.usage.endCursor;
    }
    expect(seen).toHaveLength(30);
    expect([...seen].sort().reverse()).toEqual(seen); // newest first, no duplicates
    expect(new Set(seen).size).toBe(30);
    const f = async (filter: Record<string, unknown>) =>
      (
        (
          await a.client.gql(`query($f: UsageFilter) { usage(filter: $f, first: 200) { nodes { id } } }`, {
            f: { from: "2026-03-01T00:00:00Z", ...filter },
          })
        ).usage.nodes as unknown[]
      ).length;
    expect(await f({ model: MODEL2 })).toBe(10);
    expect(await f({ status: 429 })).toBe(3);
    expect(await f({ success: false })).toBe(3);
    expect(await f({ apiKeyId: keyA, to: "2026-03-01T10:00:00Z" })).toBe(10);
    expect(await a.client.code(`{ usage(after: "garbage") { hasNextPage } }`)).toBe("BAD_USER_INPUT");
  });

  it("statistics by hour and day, by model and by key, aggregated in SQL", async () => {
    const s = await a.client.gql(
      `{ usageStats(from: "2026-03-01T00:00:00Z", to: "2026-03-03T00:00:00Z", granularity: DAY) {
          total { requests errors promptTokens totalTokens amount }
          series { bucket requests amount }
          byModel { model requests amount }
          byKey { apiKeyId apiKeyName requests }
      } }`,
    );
    expect(s.usageStats.total).toEqual({
      requests: 30,
      errors: 3,
      promptTokens: 3000,
      totalTokens: 4500,
      amount: "0.075",
    });
    expect(s.usageStats.series).toEqual([
      { bucket: "2026-03-01T00:00:00.000Z", requests: 24, amount: "0.06" },
      { bucket: "2026-03-02T00:00:00.000Z", requests: 6, amount: "0.015" },
    ]);
    expect(s.usageStats.byModel).toEqual([
      { model: MODEL, requests: 20, amount: "0.05" },
      { model: MODEL2, requests: 10, amount: "0.025" },
    ]);
    expect(s.usageStats.byKey).toEqual([{ apiKeyId: keyA, apiKeyName: "a-prod", requests: 30 }]);
    const hourly = await a.client.gql(
      `{ usageStats(from: "2026-03-01T00:00:00Z", to: "2026-03-01T05:00:00Z", granularity: HOUR, model: "${MODEL2}") { series { bucket requests } } }`,
    );
    expect(hourly.usageStats.series).toEqual([
      { bucket: "2026-03-01T00:00:00.000Z", requests: 1 },
      { bucket: "2026-03-01T03:00:00.000Z", requests: 1 },
    ]);
    // local days: in New York, 2026-03-01 starts at 05:00Z
    const ny = await a.client.gql(
      `{ usageStats(from: "2026-02-28T00:00:00Z", to: "2026-03-03T00:00:00Z", granularity: DAY, timeZone: "America/New_York") { series { bucket requests } } }`,
    );
    expect(ny.usageStats.series[0]).toEqual({ bucket: "2026-02-28T05:00:00.000Z", requests: 5 });
    expect(await a.client.code(`{ usageStats(timeZone: "Mars/Olympus") { total { requests } } }`)).toBe(
      "BAD_USER_INPUT",
    );
    expect(
      await a.client.code(
        `{ usageStats(from: "2020-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z", granularity: HOUR) { total { requests } } }`,
      ),
    ).toBe("BAD_USER_INPUT");
  });

  it("models with prices under the customer's contract", async () => {
    await ops.gql(
      `mutation($a: ID!) { setPriceContract(input: { accountId: $a, modelId: "${MODEL}", inputPrice: "0.1", outputPrice: "0.5" }) { inputPrice } }`,
      { a: a.accountId },
    );
    const m = await a.client.gql(
      `{ models { id displayName reasoning inputPrice outputPrice cachedInputPrice contracted } }`,
    );
    expect(m.models).toEqual([
      {
        id: MODEL,
        displayName: "Acme Chat",
        reasoning: false,
        inputPrice: "0.1",
        outputPrice: "0.5",
        cachedInputPrice: null,
        contracted: true,
      },
      {
        id: MODEL2,
        displayName: null,
        reasoning: true,
        inputPrice: "3",
        outputPrice: "15",
        cachedInputPrice: "0.3",
        contracted: false,
      },
    ]);
    const mb = await b.client.gql(`{ models { id inputPrice contracted } }`);
    expect(mb.models[0]).toEqual({ id: MODEL, inputPrice: "0.15", contracted: false });
    const stored = await h.app.prisma.priceContract.findFirstOrThrow({ where: { accountId: a.accountId } });
    expect(stored.inputPriceMicro).toBe(100_000n);
  });

  it("prompt-cache prices: defaults derived from input, explicit ones kept, a missing price refused", async () => {
    await ops.gql(
      `mutation($a: ID!) { setPriceContract(input: { accountId: $a, modelId: "${MODEL2}", inputPrice: "0.000001", outputPrice: "1", cacheWrite1hPrice: "0" }) { cacheWrite5mPrice cacheWrite1hPrice } }`,
      { a: a.accountId },
    );
    const m = await a.client.gql(`{ models { id cacheWrite5mPrice cacheWrite1hPrice } }`);
    // 1.25 × 0.000001 stays exact: 0.00000125 per 1M; the explicit 0 is free, not derived.
    expect(m.models.find((x: { id: string }) => x.id === MODEL2)).toEqual({
      id: MODEL2,
      cacheWrite5mPrice: "0.00000125",
      cacheWrite1hPrice: "0",
    });
    const mb = await b.client.gql(`{ models { id cacheWrite5mPrice cacheWrite1hPrice } }`);
    expect(mb.models.find((x: { id: string }) => x.id === MODEL2)).toEqual({
      id: MODEL2,
      cacheWrite5mPrice: "3.75",
      cacheWrite1hPrice: "6",
    });
    // No silent zero: a price must be an amount ("0" to make a model free).
    expect(
      await ops.code(
        `mutation { upsertModel(input: { id: "free-chat-2025-01-01", inputPrice: "", outputPrice: "1" }) { id } }`,
      ),
    ).toBe("BAD_USER_INPUT");
    expect(
      await ops.code(`mutation { upsertModel(input: { id: "free-chat-2025-01-01", outputPrice: "1" }) { id } }`),
    ).toBeDefined();
    const free = await ops.gql(
      `mutation { upsertModel(input: { id: "free-chat-2025-01-01", inputPrice: "0", outputPrice: "0" }) { inputPrice cacheWrite5mPrice } }`,
    );
    expect(free.upsertModel).toEqual({ inputPrice: "0", cacheWrite5mPrice: null });
    await ops.gql(`mutation { deleteModel(id: "free-chat-2025-01-01") }`);
  });

  it("usage: the breakdown, unit prices, estimate flag and attribution; filtered and grouped by end user and tag", async () => {
    const at = new Date("2026-04-01T10:30:00Z");
    await h.app.prisma.usageLog.createMany({
      data: [
        { user: "u1", tags: ["team=search", "canary"], cost: 100n },
        { user: "u1", tags: ["team=search"], cost: 200n },
        { user: "u2", tags: ["team=ml"], cost: 400n },
        { user: null, tags: [], cost: 800n },
      ].map((r, i) => ({
        requestId: randomUUID(),
        accountId: a.accountId,
        apiKeyId: keyA,
        model: MODEL,
        protocol: "anthropic",
        status: 200,
        promptTokens: 100,
        inputTokens: 10,
        cachedTokens: 20,
        cacheWrite5mTokens: 30,
        cacheWrite1hTokens: 40,
        completionTokens: 5,
        costMicro: r.cost,
        latencyMs: 5,
        startedAt: new Date(at.getTime() + i * 1000),
        endUser: r.user,
        tags: r.tags,
        estimated: i === 3,
        inputPrice: "3000001",
        cachedInputPrice: "300000",
        cacheWrite5mPrice: "3750001.25",
        cacheWrite1hPrice: "6000002",
        outputPrice: "15000000",
      })),
    });
    const window = `from: "2026-04-01T00:00:00Z", to: "2026-04-02T00:00:00Z"`;
    const u = await a.client.gql(
      `{ usage(filter: { ${window}, tag: "team=search" }) { nodes { endUser tags inputTokens cachedTokens cacheWrite5mTokens cacheWrite1hTokens estimated amountMicro prices { input cacheWrite5m cacheWrite1h } } } }`,
    );
    expect(u.usage.nodes).toEqual([
      {
        endUser: "u1",
        tags: ["team=search"],
        inputTokens: 10,
        cachedTokens: 20,
        cacheWrite5mTokens: 30,
        cacheWrite1hTokens: 40,
        estimated: false,
        amountMicro: "200",
        prices: { input: "3.000001", cacheWrite5m: "3.75000125", cacheWrite1h: "6.000002" },
      },
      {
        endUser: "u1",
        tags: ["team=search", "canary"],
        inputTokens: 10,
        cachedTokens: 20,
        cacheWrite5mTokens: 30,
        cacheWrite1hTokens: 40,
        estimated: false,
        amountMicro: "100",
        prices: { input: "3.000001", cacheWrite5m: "3.75000125", cacheWrite1h: "6.000002" },
      },
    ]);
    const byUser = await a.client.gql(`{ usage(filter: { ${window}, endUser: "u2" }) { nodes { amountMicro } } }`);
    expect(byUser.usage.nodes).toEqual([{ amountMicro: "400" }]);
    const s = await a.client.gql(
      `{ usageStats(${window}, granularity: HOUR) { total { amountMicro } byEndUser { endUser requests amountMicro } byTag { tag amountMicro } } }`,
    );
    expect(s.usageStats.total.amountMicro).toBe("1500");
    expect(s.usageStats.byEndUser).toEqual([
      { endUser: null, requests: 1, amountMicro: "800" },
      { endUser: "u2", requests: 1, amountMicro: "400" },
      { endUser: "u1", requests: 2, amountMicro: "300" },
    ]);
    expect(s.usageStats.byTag).toEqual([
      { tag: "team=ml", amountMicro: "400" },
      { tag: "team=search", amountMicro: "300" },
      { tag: "canary", amountMicro: "100" },
    ]);
    const tagged = await a.client.gql(
      `{ usageStats(${window}, granularity: HOUR, tag: "team=search") { total { requests amountMicro } } }`,
    );
    expect(tagged.usageStats.total).toEqual({ requests: 2, amountMicro: "300" });
  });
});

describe("operator catalog", () => {
  it("manages upstreams (sealed credential), routes, models and limits", async () => {
    const up = await ops.gql(
      `mutation { upsertUpstream(input: { name: "acme", protocol: openai, baseUrl: "https://api.acme.example/v1/", apiKey: "upstream-secret" }) { id baseUrl hasApiKey } }`,
    );
    expect(up.upsertUpstream).toMatchObject({ baseUrl: "https://api.acme.example/v1", hasApiKey: true });
    const row = await h.app.prisma.upstream.findUniqueOrThrow({ where: { id: up.upsertUpstream.id } });
    expect(row.apiKeyEnc).not.toContain("upstream-secret");
    const route = await ops.gql(
      `mutation($u: ID!) { upsertRoute(input: { modelId: "${MODEL}", upstreamId: $u, upstreamModel: "chat-v1", weight: 3 }) { id weight upstream { name } } }`,
      { u: up.upsertUpstream.id },
    );
    expect(route.upsertRoute).toMatchObject({ weight: 3, upstream: { name: "acme" } });
    const cat = await ops.gql(`{ catalogModels { id routes { upstreamModel } } }`);
    expect(cat.catalogModels.find((m: { id: string }) => m.id === MODEL).routes).toEqual([
      { upstreamModel: "chat-v1" },
    ]);
    expect(
      await ops.code(`mutation { upsertModel(input: { id: "acme-chat", inputPrice: "1", outputPrice: "1" }) { id } }`),
    ).toBe("BAD_USER_INPUT");
    // A model is a chat model unless declared an embedding model.
    const embedder = await ops.gql(
      `mutation { upsertModel(input: { id: "acme-embed-2025-01-01", type: embedding, inputPrice: "0.02", outputPrice: "0" }) { id type } }`,
    );
    expect(embedder.upsertModel).toEqual({ id: "acme-embed-2025-01-01", type: "embedding" });
    const types = await ops.gql(`{ catalogModels { id type } }`);
    expect(types.catalogModels.find((m: { id: string }) => m.id === MODEL).type).toBe("chat");
    await ops.gql(`mutation { deleteModel(id: "acme-embed-2025-01-01") }`);
    expect(
      await ops.code(`mutation { upsertUpstream(input: { name: "x", protocol: openai, baseUrl: "ftp://x" }) { id } }`),
    ).toBe("BAD_USER_INPUT");
    const lim = await ops.gql(
      `mutation($a: ID!) { setAccountLimits(accountId: $a, rpm: 600, concurrency: 8) { rpm tpm concurrency } }`,
      {
        a: b.accountId,
      },
    );
    expect(lim.setAccountLimits).toEqual({ rpm: 600, tpm: null, concurrency: 8 });
    await ops.gql(`mutation($id: ID!) { deleteRoute(id: $id) }`, { id: route.upsertRoute.id });
    await ops.gql(`mutation($id: ID!) { deleteUpstream(id: $id) }`, { id: up.upsertUpstream.id });
  });

  it("disabling an account signs its users out", async () => {
    const c = await customer(h, ops, "Gone");
    await ops.gql(`mutation($a: ID!) { setAccountStatus(accountId: $a, status: disabled) { status } }`, {
      a: c.accountId,
    });
    expect((await c.client.gql(`{ me { via } }`)).me).toBeNull();
    expect(
      await new Client(h.url).code(
        `mutation { login(email: "${c.email}", password: "${c.password}") { secondStepRequired } }`,
      ),
    ).toBe("FORBIDDEN");
  });
});
