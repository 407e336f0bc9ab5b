import { randomBytes, randomUUID, createHash } from "node:crypto";
import { monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks";
import { loadavg } from "node:os";
import { Redis } from "ioredis";
import { entityJson, shardOf } from "../../data-plane/src/contract/policy-feed.ts";
import { redisNames } from "../../data-plane/src/contract/redis-names.ts";
import { SnapshotStore } from "../../data-plane/src/snapshot/store.ts";
import { RedisPolicySource } from "../../data-plane/src/snapshot/redis-feed.ts";

// `npm run bench:keys-reload [-- N]` (issue 13): a replica's full load of N keys (N/10 accounts) in isolation,
// without Postgres or a control plane: fills Redis with one epoch of the policy feed in the control plane's
// format, then times one store's start-up load and a reload (a gap) while a 1 ms timer looks keys up, and
// reports wall time, CPU, event-loop delay (perf_hooks.monitorEventLoopDelay) and the lookups' worst gap.
// Run with `node --trace-gc` / `--cpu-prof` through NODE_OPTIONS to see what blocks the loop.

const n = Number(process.argv[2] ?? 1_000_000);
const accounts = Math.max(1, Math.floor(n / 10));
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
// BENCH_RELOAD_PREFIX keeps the filled feed between runs (filling 1M keys takes about a minute)
const kept = process.env.BENCH_RELOAD_PREFIX;
const names = redisNames(kept ?? `mgbench:reload:${randomBytes(4).toString("hex")}:`);
const redis = new Redis(REDIS_URL);
const sub = new Redis(REDIS_URL);
const epoch = "e1";
const hashOf = (i: number) => createHash("sha256").update(`sk-mg-bench-${i}`).digest("hex");

async function fill(): Promise<void> {
  const t0 = performance.now();
  const accountIds = Array.from({ length: accounts }, () => randomUUID());
  let v = 1;
  const write = async (kind: "key" | "account", entries: [string, string][]) => {
    const byShard = new Map<number, string[]>();
    for (const [id, json] of entries) {
      const s = shardOf(id);
      const f = byShard.get(s);
      if (f) f.push(id, json);
      else byShard.set(s, [id, json]);
    }
    const p = redis.pipeline();
    for (const [s, f] of byShard) p.hset(names.policyShard(epoch, kind, s), ...f);
    await p.exec();
  };
  for (let from = 0; from < accounts; from += 10_000) {
    const page: [string, string][] = [];
    for (let i = from; i < Math.min(accounts, from + 10_000); i++)
      page.push([
        accountIds[i]!,
        entityJson(v++, {
          id: accountIds[i],
          name: `acct-${i + 1}`,
          status: "active",
          balance: "1000000000000000",
          spent: "0",
          limits: { rpm: null, tpm: null, concurrency: null },
          timeZone: "UTC",
          contracts: {},
        }),
      ]);
    await write("account", page);
  }
  for (let from = 1; from <= n; from += 10_000) {
    const page: [string, string][] = [];
    for (let i = from; i < Math.min(n + 1, from + 10_000); i++)
      page.push([
        hashOf(i),
        entityJson(v++, {
          id: randomUUID(),
          accountId: accountIds[i % accounts],
          name: `key-${i}`,
          status: "active",
          expiresAt: null,
          quota: null,
          spent: "0",
          allowedModels: [],
          ipAllowlist: [],
          limits: { rpm: null, tpm: null, concurrency: null },
        }),
      ]);
    await write("key", page);
  }
  await redis.set(names.policyCatalog(epoch), entityJson(v++, { models: {} }));
  await redis.xadd(names.policyStream(epoch), "*", "s", "0", "k", "catalog", "i", "", "v", "0", "d", "");
  const [last] = (await redis.xrevrange(names.policyStream(epoch), "+", "-", "COUNT", 1)) as [string, string[]][];
  await redis.hset(names.policyMeta, { epoch, seq: 0, lastId: last![0], version: v, at: Date.now(), cursor: "x" });
  console.log(`filled ${n} keys, ${accounts} accounts in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// The histogram records whole intervals between its 1 ms timer's firings: lateness is what exceeds 1 ms.
const late = (ns: number) => Math.max(0, ns / 1e6 - 1).toFixed(2);
const pct = (h: ReturnType<typeof monitorEventLoopDelay>, q: number) => late(h.percentile(q));

async function measure(label: string, run: () => Promise<void>): Promise<void> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  // a stand-in for requests: a lookup of a known key every millisecond; the longest gap between two
  let worstGap = 0;
  let last = performance.now();
  let lookups = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last);
    last = now;
    if (store.key(hashOf(1 + (lookups++ % n)))) return;
  }, 1);
  const gcs: number[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e.duration);
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  h.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  h.disable();
  clearInterval(probe);
  gcObserver.disconnect();
  gcs.sort((a, b) => a - b);
  const mem = process.memoryUsage();
  console.log(
    `${label}: wall ${(wall / 1000).toFixed(2)} s, CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s; loop delay p50 ${pct(h, 50)} / p99 ${pct(h, 99)} / max ${late(h.max)} ms; GC pauses ${gcs.length}, p99 ${(gcs[Math.floor(gcs.length * 0.99)] ?? 0).toFixed(1)} / max ${(gcs.at(-1) ?? 0).toFixed(1)} ms; worst lookup gap ${worstGap.toFixed(1)} ms (${lookups} lookups); heap ${(mem.heapUsed / 1048576).toFixed(0)} MB, RSS ${(mem.rss / 1048576).toFixed(0)} MB; keys ${store.size.keys}; load ${loadavg()[0]!.toFixed(1)}`,
  );
}

const store = new SnapshotStore();
const scanCount = process.env.BENCH_SCAN_COUNT ? Number(process.env.BENCH_SCAN_COUNT) : undefined;
const source = new RedisPolicySource(redis, sub, store, names, 3_600_000, undefined, { scanCount });
try {
  if (!kept || !(await redis.exists(names.policyMeta))) await fill();
  else await redis.hset(names.policyMeta, "seq", 0);
  await measure("start-up load", () => source.sync());
  await measure("idle 2 s", () => new Promise((r) => setTimeout(r, 2_000)));
  await redis.hincrby(names.policyMeta, "seq", 5); // a gap: the replica must load in full again
  await measure("reload (gap)", () => source.sync());
} finally {
  let cursor = "0";
  if (!kept)
    do {
      const [c, keys] = await redis.scan(cursor, "MATCH", `${names.prefix}*`, "COUNT", 1000);
      cursor = c;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== "0");
  redis.disconnect();
  sub.disconnect();
}
