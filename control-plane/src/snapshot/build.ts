import type { Snapshot } from "@modelgate/data-plane";
import { controlCalendar } from "../budgets/calendar.ts";
import { budgetSnapshots } from "../budgets/snapshot.ts";
import type { Db } from "../db/client.ts";

const str = (n: bigint) => n.toString();

/**
 * Reads everything the data plane needs to decide a request without Postgres.
 * Revoked keys stay in the snapshot (as revoked) so the data plane can say "revoked" rather than "unknown".
 */
export async function buildSnapshot(prisma: Db, version: number, calendar = controlCalendar): Promise<Snapshot> {
  const [keys, accounts, models, contracts] = await Promise.all([
    prisma.apiKey.findMany(),
    prisma.account.findMany(),
    prisma.model.findMany({ where: { enabled: true }, include: { routes: { include: { upstream: true } } } }),
    prisma.priceContract.findMany(),
  ]);
  // Read after the keys and accounts (their cumulative spent): a call settled in between is then in the period
  // figure and still in the data plane's unsettled spend, counted twice for a moment (safe), never missed.
  const budgets = await budgetSnapshots(prisma, accounts, keys, calendar);
  const snapshot: Snapshot = { version, generatedAt: new Date().toISOString(), keys: {}, accounts: {}, models: {} };
  for (const a of accounts) {
    snapshot.accounts[a.id] = {
      id: a.id,
      name: a.name,
      status: a.status,
      balance: str(a.balanceMicro),
      spent: str(a.spentMicro),
      limits: { rpm: a.rpm, tpm: a.tpm, concurrency: a.concurrency },
      ...(a.timeZone === "UTC" ? {} : { timeZone: a.timeZone }),
      ...(budgets.get(a.id) ? { budgets: budgets.get(a.id) } : {}),
      contracts: {},
    };
  }
  for (const c of contracts) {
    const account = snapshot.accounts[c.accountId];
    if (!account) continue;
    account.contracts[c.modelId] = {
      input: str(c.inputPriceMicro),
      output: str(c.outputPriceMicro),
      cachedInput: c.cachedInputPriceMicro === null ? null : str(c.cachedInputPriceMicro),
      cacheWrite5m: c.cacheWrite5mPriceMicro === null ? null : str(c.cacheWrite5mPriceMicro),
      cacheWrite1h: c.cacheWrite1hPriceMicro === null ? null : str(c.cacheWrite1hPriceMicro),
    };
  }
  for (const k of keys) {
    snapshot.keys[k.keyHash] = {
      id: k.id,
      accountId: k.accountId,
      name: k.name,
      status: k.status,
      expiresAt: k.expiresAt?.toISOString() ?? null,
      quota: k.quotaMicro === null ? null : str(k.quotaMicro),
      spent: str(k.spentMicro),
      allowedModels: k.allowedModels,
      ipAllowlist: k.ipAllowlist,
      limits: { rpm: k.rpm, tpm: k.tpm, concurrency: k.concurrency },
      ...(budgets.get(k.id) ? { budgets: budgets.get(k.id) } : {}),
    };
  }
  for (const m of models) {
    snapshot.models[m.id] = {
      id: m.id,
      displayName: m.displayName,
      reasoning: m.reasoning,
      type: m.type,
      createdAt: m.createdAt.toISOString(),
      price: {
        input: str(m.inputPriceMicro),
        output: str(m.outputPriceMicro),
        cachedInput: m.cachedInputPriceMicro === null ? null : str(m.cachedInputPriceMicro),
        cacheWrite5m: m.cacheWrite5mPriceMicro === null ? null : str(m.cacheWrite5mPriceMicro),
        cacheWrite1h: m.cacheWrite1hPriceMicro === null ? null : str(m.cacheWrite1hPriceMicro),
      },
      routes: m.routes
        .filter((r) => r.upstream.enabled)
        .map((r) => ({
          upstream: r.upstream.name,
          protocol: r.upstream.protocol === "openai_responses" ? ("openai-responses" as const) : r.upstream.protocol,
          baseUrl: r.upstream.baseUrl,
          apiKeyEnc: r.upstream.apiKeyEnc,
          upstreamModel: r.upstreamModel,
          weight: r.weight,
          priority: r.priority,
          connectTimeoutMs: r.upstream.connectTimeoutMs,
          firstByteTimeoutMs: r.upstream.firstByteTimeoutMs,
          idleTimeoutMs: r.upstream.idleTimeoutMs,
        })),
    };
  }
  return snapshot;
}
