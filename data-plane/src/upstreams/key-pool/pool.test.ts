import { randomBytes } from "node:crypto";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { RouteKey, RouteSnapshot } from "../../contract/index.ts";
import { seal } from "../../crypto/secret-box.ts";
import { GatewayError } from "../../errors.ts";
import type { DataPlaneOptions } from "../../server/context.ts";
import { BreakerRegistry } from "../breaker.ts";
import type { UpstreamRequest, UpstreamResponse, UpstreamTransport } from "../transport.ts";
import { callUpstream } from "../upstream-call.ts";
import { chooseKey } from "./choose.ts";
import { KeyHealth, keyField } from "./health.ts";
import { RetryBudget } from "./retry-budget.ts";

// A route's key pool through callUpstream, against a transport that answers per key (the bearer it is sent).

const masterKey = randomBytes(32);
type Reply = { status: number; body?: string; headers?: Record<string, string> };
let behaviour: Record<string, Reply>;
let sent: string[];
const transport: UpstreamTransport = {
  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const key = req.headers.authorization!.slice("Bearer ".length);
    sent.push(key);
    const r = behaviour[key] ?? { status: 200 };
    const body = r.body ?? (r.status === 200 ? '{"ok":true}' : '{"error":{"message":"no","type":"x"}}');
    return {
      status: r.status,
      headers: r.headers ?? {},
      body: (async function* () {
        yield Buffer.from(body);
      })(),
      text: async () => body,
    };
  },
  close: async () => undefined,
};

const key = (id: string, weight = 1, enabled = true): RouteKey => ({
  id,
  apiKeyEnc: seal(masterKey, `sk-${id}`),
  weight,
  enabled,
});
const route = (keys: RouteKey[], upstream = "pool"): RouteSnapshot => ({
  upstream,
  protocol: "openai",
  baseUrl: "http://upstream.test/v1",
  apiKeyEnc: null,
  upstreamModel: "m",
  weight: 1,
  priority: 0,
  connectTimeoutMs: 1000,
  firstByteTimeoutMs: 1000,
  idleTimeoutMs: 1000,
  keys,
});

let opts: DataPlaneOptions;
let health: KeyHealth;
let disabled: { upstream: string; key: string; reason: string }[];
beforeEach(() => {
  behaviour = {};
  sent = [];
  disabled = [];
  health = new KeyHealth((d) => disabled.push(d));
  opts = {
    transport,
    demo: transport,
    breakers: new BreakerRegistry({ consecutiveFailures: 2, minAccounts: 1 }),
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    metrics: { upstreamErrors: { inc: () => undefined } },
    logger: { warn: () => undefined, error: () => undefined, info: () => undefined },
    masterKey,
    keyHealth: health,
    retryBudget: new RetryBudget(),
  } as unknown as DataPlaneOptions;
});

const call = (routes: RouteSnapshot[], affinity: string | null = null) =>
  callUpstream(
    opts,
    routes,
    () => ({ path: "/chat/completions", body: "{}" }),
    new AbortController().signal,
    "acct",
    null,
    () => false,
    affinity,
  );

describe("key pool", () => {
  it("spreads calls over the keys by weight", async () => {
    const r = route([key("a", 3), key("b", 1)]);
    for (let i = 0; i < 400; i++) await call([r]);
    const a = sent.filter((k) => k === "sk-a").length;
    expect(a).toBeGreaterThan(250);
    expect(a).toBeLessThan(350);
  });

  it("takes a key answered 401 or 403 out of the rotation and serves the call with another", async () => {
    behaviour["sk-a"] = { status: 401 };
    behaviour["sk-b"] = { status: 403 };
    const r = route([key("a"), key("b"), key("c")]);
    for (let i = 0; i < 20; i++) {
      const answer = await call([r]);
      expect(answer.upstream.status).toBe(200);
    }
    expect(sent.filter((k) => k === "sk-a")).toHaveLength(1);
    expect(sent.filter((k) => k === "sk-b")).toHaveLength(1);
    expect(disabled.map((d) => `${d.key}:${d.reason}`).sort()).toEqual(["a:unauthorized", "b:forbidden"]);
    expect(health.usable(keyField("pool", "a"), Date.now())).toBe(false);
  });

  it("disables a key answered 402 or insufficient_quota until it is enabled", async () => {
    behaviour["sk-a"] = { status: 402 };
    behaviour["sk-b"] = {
      status: 429,
      body: '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}',
    };
    const r = route([key("a"), key("b"), key("c")]);
    for (let i = 0; i < 10; i++) expect((await call([r])).upstream.status).toBe(200);
    expect(disabled.map((d) => `${d.key}:${d.reason}`).sort()).toEqual(["a:payment_required", "b:insufficient_quota"]);
    health.enable("pool", "a");
    delete behaviour["sk-a"];
    for (let i = 0; i < 30; i++) await call([r]);
    expect(sent.filter((k) => k === "sk-a").length).toBeGreaterThan(1);
    expect(sent.filter((k) => k === "sk-b")).toHaveLength(1);
  });

  it("rests a key answered 429 for its retry-after, then uses it again", async () => {
    // The pool's clock is Date.now(): only Date is faked, so the calls' own timers run as usual.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      behaviour["sk-a"] = { status: 429, headers: { "retry-after": "1" } };
      const r = route([key("a"), key("b")]);
      for (let i = 0; i < 10; i++) expect((await call([r])).upstream.status).toBe(200);
      expect(sent.filter((k) => k === "sk-a")).toHaveLength(1);
      expect(disabled).toEqual([]);
      delete behaviour["sk-a"];
      // not used while its retry-after (1 s) runs…
      vi.setSystemTime(Date.now() + 900);
      for (let i = 0; i < 20; i++) await call([r]);
      expect(sent.filter((k) => k === "sk-a")).toHaveLength(1);
      // …and used again once it has passed
      vi.setSystemTime(Date.now() + 200);
      for (let i = 0; i < 20; i++) await call([r]);
      expect(sent.filter((k) => k === "sk-a").length).toBeGreaterThan(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("retries a 5xx on another key and counts it to that key's own breaker", async () => {
    behaviour["sk-a"] = { status: 503 };
    const r = route([key("a"), key("b")]);
    for (let i = 0; i < 20; i++) expect((await call([r])).upstream.status).toBe(200);
    expect(opts.breakers.get("pool/a").state(Date.now())).toBe("open");
    expect(opts.breakers.get("pool/b").state(Date.now())).toBe("closed");
    // the open breaker keeps key a out: at most the two failures that opened it
    expect(sent.filter((k) => k === "sk-a")).toHaveLength(2);
    expect(disabled).toEqual([]);
  });

  it("fails with the gateway's 502 (never the upstream's 401) when every key is refused", async () => {
    behaviour["sk-a"] = { status: 401 };
    behaviour["sk-b"] = { status: 401 };
    const err = await call([route([key("a"), key("b")])]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe("upstream_auth_failed");
  });

  it("moves to the next route when every key of the first is refused", async () => {
    behaviour["sk-a"] = { status: 401 };
    const answer = await call([route([key("a")], "first"), route([key("z")], "second")]);
    expect(answer.route.upstream).toBe("second");
  });

  it("never uses a key the snapshot has disabled", async () => {
    const r = route([key("a", 1, false), key("b")]);
    for (let i = 0; i < 20; i++) await call([r]);
    expect(sent.every((k) => k === "sk-b")).toBe(true);
  });

  it("prefers a key whose rate limit is nearly used up less", async () => {
    behaviour["sk-a"] = {
      status: 200,
      headers: { "x-ratelimit-remaining-requests": "1", "x-ratelimit-limit-requests": "100" },
    };
    const r = route([key("a"), key("b")]);
    for (let i = 0; i < 300; i++) await call([r]);
    expect(sent.filter((k) => k === "sk-a").length).toBeLessThan(40);
  });

  it("keeps one conversation on one key with affinity, and moves only the leaving key's share", async () => {
    const keys = [key("a"), key("b"), key("c")];
    const r = route(keys);
    const before = new Map<string, string>();
    for (let i = 0; i < 300; i++) {
      sent = [];
      await call([r], `conv-${i}`);
      await call([r], `conv-${i}`);
      expect(sent[0]).toBe(sent[1]);
      before.set(`conv-${i}`, sent[0]!);
    }
    const spread = new Set(before.values());
    expect(spread.size).toBe(3);
    behaviour["sk-b"] = { status: 401 };
    let moved = 0;
    for (const [conv, was] of before) {
      sent = [];
      await call([r], conv);
      const now = sent.at(-1)!;
      if (was !== "sk-b") expect(now).toBe(was);
      else moved++;
    }
    expect(moved).toBeGreaterThan(50);
  });
});

describe("chooseKey", () => {
  it("is null when no key is usable", () => {
    expect(
      chooseKey(
        [key("a")],
        () => false,
        () => 1,
        null,
      ),
    ).toBeNull();
    expect(
      chooseKey(
        [key("a")],
        () => false,
        () => 1,
        "x",
      ),
    ).toBeNull();
  });
});

describe("retry budget", () => {
  it("allows retries up to its share of the calls plus the floor", () => {
    const b = new RetryBudget({ ratio: 0.2, minRetries: 2, windowMs: 10_000 });
    for (let i = 0; i < 100; i++) b.call(1000);
    let allowed = 0;
    for (let i = 0; i < 100; i++) if (b.tryRetry(1000)) allowed++;
    expect(allowed).toBe(22);
    // the window slides: a later second has budget again
    expect(b.tryRetry(20_000)).toBe(true);
  });

  it("bounds the calls an outage of every key makes", async () => {
    behaviour["sk-a"] = { status: 500 };
    behaviour["sk-b"] = { status: 500 };
    opts.breakers = new BreakerRegistry({ consecutiveFailures: 1000, minAccounts: 1 });
    opts.retryBudget = new RetryBudget({ ratio: 0.2, minRetries: 5 });
    for (let i = 0; i < 100; i++) await call([route([key("a"), key("b")])]).catch(() => undefined);
    expect(sent.length).toBeLessThanOrEqual(100 + 5 + 0.2 * 100);
  });
});
