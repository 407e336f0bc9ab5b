import OpenAI from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, type Mode, startGateway, waitForKey } from "../helpers/gateway.ts";
import { admin as runCli, eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Every key and account policy, in both modes (embedded process; control plane + two data-plane replicas on
// real Postgres and Redis), driven by the official openai SDK with retries off. For every refusal: the
// status, OpenAI's error shape and code, the request id in the header and the message, no upstream call
// (the mock's recorded requests) and no charge (the wallet and the usage log). Then the bounds under
// concurrency: a quota overrun by 200 parallel calls stays within one call's cost (reservations), and
// two replicas together hold an rpm limit within 5%.

const MODEL = "gpt-4o-mini-2024-07-18";
const OTHER = "acme-chat-2025-01-01";
const UPSTREAM_KEY = "sk-upstream-matrix";
// Prices per 1M tokens: input 1, output 2. The mock answers 1000 + 1000 tokens: 1000 × 1 + 1000 × 2 = 3000 micro.
const COST = 3000n;
const TOKENS = 2000;
/** the account whose calls serve as barriers in the usage streams (settledSoFar) */
const BARRIER = "barrier";
const config = {
  upstreams: [{ name: "mock", protocol: "openai", baseUrl: "", apiKey: "${MATRIX_UPSTREAM_KEY}" }],
  models: [
    {
      id: MODEL,
      reasoning: false,
      price: { input: 1, output: 2 },
      routes: [{ upstream: "mock", model: "gpt-4o-mini", weight: 1 }],
    },
    {
      id: OTHER,
      reasoning: false,
      price: { input: 1, output: 2 },
      routes: [{ upstream: "mock", model: "acme-chat", weight: 1 }],
    },
  ],
};

interface OpenAIErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string;
}

describe.each(["embedded", "distributed"] as Mode[])("%s mode", (mode) => {
  let gw: Gateway;
  let mock: OpenAIMock;
  /** the balance each account must show once its successful calls settled (refusals add nothing) */
  const expected = new Map<string, bigint>();
  const refusedIds = new Set<string>();
  let altPeer: Agent | null = null;
  /** a key of BARRIER's, whose calls mark a point in each data plane's usage stream (settledSoFar) */
  let barrierKey: string;

  beforeAll(async () => {
    mock = await startOpenAIMock(UPSTREAM_KEY);
    mock.fallback = { content: "fine", promptTokens: 1000, completionTokens: 1000 };
    config.upstreams[0]!.baseUrl = mock.url;
    gw = await startGateway(mode, { config, env: { MATRIX_UPSTREAM_KEY: UPSTREAM_KEY } });
    await openAccount("acme", "100");
    await openAccount(BARRIER, "100");
    barrierKey = (await newKey(BARRIER)).key;
  }, 180_000);

  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await altPeer?.close();
  });

  async function openAccount(name: string, balance: string, limits: Record<string, string> = {}): Promise<void> {
    await gw.admin("account create", { name, balance });
    if (Object.keys(limits).length) await gw.admin("account update", { account: name, ...limits });
    expected.set(name, BigInt(Math.round(Number(balance) * 1e6)));
  }

  async function newKey(
    account: string,
    restrictions: Record<string, string> = {},
  ): Promise<{ id: string; key: string }> {
    const k = await gw.admin<{ id: string; key: string }>("key create", { account, ...restrictions });
    await waitForKey(gw, k.key);
    return k;
  }

  const sdk = (key: string, base = gw.trustedBase, extra: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
    new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, ...extra });
  const ask = (c: OpenAI, model = MODEL) =>
    c.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }).withResponse();

  /** A call that must go through: answered with usage, and charged COST to the account. */
  async function served(account: string, c: OpenAI, model = MODEL): Promise<Headers> {
    const { data, response } = await ask(c, model);
    expect(data.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 1000 });
    expected.set(account, expected.get(account)! - COST);
    return response.headers;
  }

  /** A call that must be refused before any upstream work: status, shape, code, request id; no upstream call. */
  async function refused(
    c: OpenAI,
    status: number,
    code: string,
    model = MODEL,
  ): Promise<{ body: OpenAIErrorBody; headers: Headers }> {
    const calls = mock.requests.length;
    const err = await ask(c, model).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err, `expected ${status} ${code}`).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect({ status: e.status, code: e.code }).toEqual({ status, code });
    const body = e.error as OpenAIErrorBody;
    expect(Object.keys(body).sort()).toEqual(["code", "message", "param", "type"]);
    expect(typeof body.type).toBe("string");
    const id = e.headers!.get("x-gateway-request-id")!;
    expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(body.message).toContain(`(request id: ${id})`);
    expect(mock.requests.length).toBe(calls);
    refusedIds.add(id);
    return { body, headers: e.headers! };
  }

  /** Successful calls settled to the micro-unit; refusals moved nothing and left no usage row. */
  async function nothingChargedFor(...accounts: string[]): Promise<void> {
    for (const a of accounts)
      await eventually(
        () => gw.balance(a),
        (b) => b === expected.get(a),
        15_000,
      );
    await settledSoFar();
    for (const a of accounts) {
      expect(await gw.balance(a)).toBe(expected.get(a));
      expect((await gw.usage(a)).filter((r) => refusedIds.has(r.requestId))).toEqual([]);
    }
  }

  /**
   * Usage settles in the order each data plane's calls end: once a call served after the refusals has its usage
   * row, anything a refusal had charged or logged is in too. One such call through every data plane (BARRIER's
   * own balance is asserted nowhere).
   */
  async function settledSoFar(): Promise<void> {
    const ids: string[] = [];
    for (const base of gw.bases)
      ids.push((await ask(sdk(barrierKey, base))).response.headers.get("x-gateway-request-id")!);
    await eventually(
      () => gw.usage(BARRIER, 20),
      (rows) => ids.every((id) => rows.some((r) => r.requestId === id)),
      15_000,
      50,
    );
  }

  /** Waits until GET /v1/models (no upstream, no charge) says the key is refused with this code everywhere. */
  const propagated = (key: string, code: string) =>
    Promise.all(
      gw.bases.map((base) =>
        eventually(
          async () =>
            (
              (await (await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
                error?: { code: string };
              }
            ).error?.code ?? "ok",
          (c) => c === code,
          5_000,
          50,
        ),
      ),
    );

  describe("keys", () => {
    it("unknown key: 401 invalid_api_key", async () => {
      const { body } = await refused(sdk("sk-mg-0000000000000000000000000000000000000000"), 401, "invalid_api_key");
      expect(body.type).toBe("invalid_request_error");
      for (const base of gw.bases) await refused(sdk("sk-mg-not-a-key", base), 401, "invalid_api_key");
    });

    it("revoked key: 401 key_revoked on every data plane, GET /v1/models included", async () => {
      const k = await newKey("acme");
      await served("acme", sdk(k.key));
      await gw.admin("key revoke", { id: k.id });
      await propagated(k.key, "key_revoked");
      for (const base of gw.bases) await refused(sdk(k.key, base), 401, "key_revoked");
      await expect(sdk(k.key).models.list()).rejects.toMatchObject({ status: 401, code: "key_revoked" });
      await nothingChargedFor("acme");
    });

    it("expired key: 401 key_expired once the expiry passes while the key is in use; no key is issued already expired", async () => {
      // The CLI follows the API's rule (services/key-policy.ts issueApiKey): an expiry in the past is refused.
      await expect(newKey("acme", { expires: "2020-01-01T00:00:00Z" })).rejects.toThrow(/past/);

      const expiresAt = Date.now() + 2_000;
      const soon = await newKey("acme", { expires: new Date(expiresAt).toISOString() });
      await served("acme", sdk(soon.key));
      // No new snapshot is needed: the data plane checks the clock on every call (the model list, which charges
      // nothing, says when it has passed).
      await propagated(soon.key, "key_expired");
      for (const base of gw.bases) await refused(sdk(soon.key, base), 401, "key_expired");
      const { body } = await refused(sdk(soon.key), 401, "key_expired");
      expect(body.message).toContain(new Date(expiresAt).toISOString());
      await nothingChargedFor("acme");
    });

    it("quota cap reached: 429 insufficient_quota with x-should-retry: false", async () => {
      const k = await newKey("acme", { quota: "0.003" }); // exactly one call
      // The answer's last byte waits until the replica's spend counters took its cost: the next call sees it.
      await served("acme", sdk(k.key));
      const { headers, body } = await refused(sdk(k.key), 429, "insufficient_quota");
      expect(headers.get("x-should-retry")).toBe("false");
      expect(body.message).toContain("quota");
      await nothingChargedFor("acme");
      // Settled: every data plane refuses it from the snapshot alone.
      for (const base of gw.bases)
        await eventually(
          () =>
            ask(sdk(k.key, base)).then(
              () => "served",
              (e: { code?: string }) => e.code,
            ),
          (c) => c === "insufficient_quota",
          5_000,
          100,
        );
      const listed = (
        await gw.admin<{ id: string; spent: string; quota: string }[]>("key list", { account: "acme" })
      ).find((x) => x.id === k.id)!;
      expect(listed).toMatchObject({ spent: "0.003", quota: "0.003" });
    });

    it("model outside the key's allowed list: 403 model_not_allowed (param model); the list shows only allowed models", async () => {
      const k = await newKey("acme", { models: OTHER });
      expect((await sdk(k.key).models.list()).data.map((m) => m.id)).toEqual([OTHER]);
      await served("acme", sdk(k.key), OTHER);
      const { body } = await refused(sdk(k.key), 403, "model_not_allowed", MODEL);
      expect(body.param).toBe("model");
      await nothingChargedFor("acme");
    });
  });

  describe("client IP allowlist (the socket address is 127.0.0.1)", () => {
    it("an allowlist that excludes the client: 403 ip_not_allowed, naming the address", async () => {
      const k = await newKey("acme", { "ip-allowlist": "10.0.0.0/8,192.168.1.7" });
      for (const base of gw.bases) {
        const { body } = await refused(sdk(k.key, base), 403, "ip_not_allowed");
        expect(body.message).toContain("127.0.0.1");
      }
      // …and it learns nothing else: not even the model list.
      await expect(sdk(k.key).models.list()).rejects.toMatchObject({ status: 403, code: "ip_not_allowed" });
      await nothingChargedFor("acme");
    });

    it("a v4 CIDR that includes the client serves it", async () => {
      const k = await newKey("acme", { "ip-allowlist": "10.0.0.0/8,127.0.0.0/8" });
      for (const base of gw.bases) await served("acme", sdk(k.key, base));
      await nothingChargedFor("acme");
    });

    it("IPv6 allowlists: a v4 client is outside them; a v6 client forwarded by a trusted proxy is inside", async () => {
      const v6 = await newKey("acme", { "ip-allowlist": "2001:db8::/32" });
      const loop6 = await newKey("acme", { "ip-allowlist": "::1" });
      await refused(sdk(v6.key), 403, "ip_not_allowed");
      await refused(sdk(loop6.key), 403, "ip_not_allowed");
      await served("acme", sdk(v6.key, gw.trustedBase, { defaultHeaders: { "x-forwarded-for": "2001:db8::5" } }));
      await refused(
        sdk(v6.key, gw.trustedBase, { defaultHeaders: { "x-forwarded-for": "2001:db9::5" } }),
        403,
        "ip_not_allowed",
      );
      await nothingChargedFor("acme");
    });

    it("X-Forwarded-For is honoured only from a trusted proxy (MODELGATE_TRUSTED_PROXIES=127.0.0.1/32)", async () => {
      const k = await newKey("acme", { "ip-allowlist": "203.0.113.0/24" });
      const xff = (value: string) => ({ defaultHeaders: { "x-forwarded-for": value } });
      // From the trusted proxy 127.0.0.1: the forwarded client counts…
      await served("acme", sdk(k.key, gw.trustedBase, xff("203.0.113.7")));
      // …walked from the right: a forged entry left of an untrusted hop is not believed…
      const { body } = await refused(sdk(k.key, gw.trustedBase, xff("203.0.113.7, 10.9.9.9")), 403, "ip_not_allowed");
      expect(body.message).toContain("10.9.9.9");
      // …and without the header the proxy's own address is the client.
      await refused(sdk(k.key, gw.trustedBase), 403, "ip_not_allowed");
      if (gw.untrustedBase) {
        // A process started without MODELGATE_TRUSTED_PROXIES ignores the header.
        await refused(sdk(k.key, gw.untrustedBase, xff("203.0.113.7")), 403, "ip_not_allowed");
      }
      // A peer that is not in the trusted list (127.0.0.2, outside 127.0.0.1/32) cannot forward either.
      altPeer ??= new Agent({ localAddress: "127.0.0.2" });
      const dispatcher = altPeer;
      const fromAltPeer = sdk(k.key, gw.trustedBase, {
        ...xff("203.0.113.7"),
        fetch: ((url: string, init: object) => undiciFetch(url, { ...init, dispatcher })) as never,
      });
      const { body: alt } = await refused(fromAltPeer, 403, "ip_not_allowed");
      expect(alt.message).toContain("127.0.0.2");
      await nothingChargedFor("acme");
    });
  });

  describe("accounts", () => {
    it("disabled account (admin CLI `account update --status disabled`): 403 account_disabled", async () => {
      await openAccount("frozen", "10");
      const k = await newKey("frozen");
      await served("frozen", sdk(k.key));
      const cli = await runCli(gw.cliEnv, "account", "update", "--account", "frozen", "--status", "disabled");
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.json).toMatchObject({ name: "frozen", status: "disabled" });
      await propagated(k.key, "account_disabled");
      for (const base of gw.bases) {
        const { body } = await refused(sdk(k.key, base), 403, "account_disabled");
        expect(body.type).toBe("permission_error");
      }
      await gw.admin("account update", { account: "frozen", status: "active" });
      await propagated(k.key, "ok");
      await served("frozen", sdk(k.key));
      await nothingChargedFor("frozen");
    });

    it("balance exhausted: 402 insufficient_balance", async () => {
      await openAccount("poor", "0.003"); // exactly one call
      const k = await newKey("poor");
      await served("poor", sdk(k.key));
      await refused(sdk(k.key), 402, "insufficient_balance");
      await nothingChargedFor("poor");
      expect(expected.get("poor")).toBe(0n);
      // Once settled, every data plane refuses it from the snapshot's balance.
      for (const base of gw.bases)
        await eventually(
          () =>
            ask(sdk(k.key, base)).then(
              () => "served",
              (e: { code?: string }) => e.code,
            ),
          (c) => c === "insufficient_balance",
          5_000,
          100,
        );
      await nothingChargedFor("poor");
    });
  });

  describe("rate limits: 429 rate_limit_exceeded with Retry-After and x-ratelimit-* headers", () => {
    const retryAfter = (h: Headers) => {
      expect(Number(h.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(h.get("retry-after-ms"))).toBeGreaterThan(0);
    };

    /** rpm 2: two calls, then 429; a success carries the headers too. */
    async function rpm(account: string, keys: OpenAI[], scope: string) {
      const h1 = await served(account, keys[0]!);
      expect(h1.get("x-ratelimit-limit-requests")).toBe("2");
      expect(h1.get("x-ratelimit-remaining-requests")).toBe("1");
      await served(account, keys[1 % keys.length]!);
      const { headers, body } = await refused(keys[0]!, 429, "rate_limit_exceeded");
      expect(body.type).toBe("rate_limit_error");
      expect(body.message).toContain(`Rate limit reached for ${scope}: 2 requests per minute`);
      retryAfter(headers);
      expect(headers.get("x-ratelimit-limit-requests")).toBe("2");
      expect(headers.get("x-ratelimit-remaining-requests")).toBe("0");
      expect(headers.get("x-ratelimit-reset-requests")).toMatch(/^[\dms.]+$/);
      if (keys.length > 1) await refused(keys[1]!, 429, "rate_limit_exceeded");
      await nothingChargedFor(account);
    }

    /** tpm 1500: the first call's actual 2000 tokens (charged at release) use the minute up. */
    async function tpm(account: string, keys: OpenAI[], scope: string) {
      await served(account, keys[0]!);
      // The release that charges the actual tokens runs after the response: the model list (no tokens, no
      // charge) shows when the minute's tokens are gone.
      await eventually(
        () => remainingTokens(keys[0]!),
        (left) => left === "0",
        5_000,
        20,
      );
      const { headers, body } = await refused(keys[1 % keys.length]!, 429, "rate_limit_exceeded");
      expect(body.message).toContain(`Rate limit reached for ${scope}: 1500 tokens per minute`);
      retryAfter(headers);
      expect(headers.get("x-ratelimit-limit-tokens")).toBe("1500");
      expect(headers.get("x-ratelimit-remaining-tokens")).toBe("0");
      expect(TOKENS).toBeGreaterThan(1500);
      await nothingChargedFor(account);
    }

    /** x-ratelimit-remaining-tokens of a model list (a refusal, once nothing is left, carries the header too) */
    const remainingTokens = (c: OpenAI) =>
      c.models
        .list()
        .withResponse()
        .then(
          ({ response }) => response.headers.get("x-ratelimit-remaining-tokens"),
          (e: InstanceType<typeof OpenAI.APIError>) => e.headers?.get("x-ratelimit-remaining-tokens") ?? null,
        );

    /** concurrency 1: a second call while the first is in flight is refused at once. */
    async function concurrency(account: string, keys: OpenAI[], scope: string) {
      const before = mock.requests.length;
      mock.queue.push({ delayMs: 1_500 });
      const first = served(account, keys[0]!);
      await eventually(
        async () => mock.requests.length,
        (n) => n > before,
        5_000,
        10,
      );
      const { headers, body } = await refused(keys[1 % keys.length]!, 429, "rate_limit_exceeded");
      expect(body.message).toContain(`Rate limit reached for ${scope}: 1 concurrent requests`);
      retryAfter(headers);
      // OpenAI has no concurrency header; the key also has rpm 1000, whose headers come along.
      expect(headers.get("x-ratelimit-limit-requests")).toBe("1000");
      await first;
      // The slot is given back after the response: the model list (which holds a slot while it runs, and charges
      // nothing) is admitted once it is free.
      await eventually(
        () =>
          keys[0]!.models.list().then(
            () => "free",
            (e: InstanceType<typeof OpenAI.APIError>) => String(e.code),
          ),
        (slot) => slot === "free",
        5_000,
        20,
      );
      await served(account, keys[1 % keys.length]!); // the slot is free again
      await nothingChargedFor(account);
    }

    it("per key: rpm", async () => {
      const k = await newKey("acme", { rpm: "2" });
      await rpm("acme", [sdk(k.key)], "this API key");
    });
    it("per key: calls refused before the upstream (400, 404) use none of the key's rpm", async () => {
      // The limits are taken while the body is read (overlapping the round trip); a refusal gives them back.
      const k = await newKey("acme", { rpm: "2" });
      const c = sdk(k.key);
      await refused(c, 404, "model_not_found", "no-such-model-2025-01-01");
      await refused(c, 404, "model_not_found", "no-such-model-2025-01-01");
      // A body the gateway itself refuses (it reads the model; what it does not read passes to the upstream)
      const bad = await c.chat.completions
        .create({ model: 42 as never, messages: [{ role: "user", content: "x" }] })
        .then(
          () => null,
          (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
        );
      expect(bad?.status).toBe(400);
      await rpm("acme", [c], "this API key");
    });
    it("per key: tpm", async () => {
      const k = await newKey("acme", { tpm: "1500" });
      await tpm("acme", [sdk(k.key)], "this API key");
    });
    it("per key: concurrency", async () => {
      const k = await newKey("acme", { concurrency: "1", rpm: "1000" });
      await concurrency("acme", [sdk(k.key)], "this API key");
    });
    it("per account (two keys share the account's limit): rpm", async () => {
      await openAccount("acct-rpm", "10", { rpm: "2" });
      const a = await newKey("acct-rpm");
      const b = await newKey("acct-rpm");
      await rpm("acct-rpm", [sdk(a.key), sdk(b.key)], "this account");
    });
    it("per account: tpm", async () => {
      await openAccount("acct-tpm", "10", { tpm: "1500" });
      const a = await newKey("acct-tpm");
      const b = await newKey("acct-tpm");
      await tpm("acct-tpm", [sdk(a.key), sdk(b.key)], "this account");
    });
    it("per account: concurrency", async () => {
      await openAccount("acct-conc", "10", { concurrency: "1", rpm: "1000" });
      const a = await newKey("acct-conc");
      const b = await newKey("acct-conc");
      await concurrency("acct-conc", [sdk(a.key), sdk(b.key)], "this account");
    });
  });

  describe("bounds under concurrency", () => {
    it("200 parallel calls overrun a key's quota by at most one call's cost", async () => {
      const CONCURRENCY = 10;
      const QUOTA = 20n * COST; // the quota covers 20 calls
      await openAccount("burst", "100");
      const k = await newKey("burst", { quota: "0.06", concurrency: String(CONCURRENCY) });
      const c = sdk(k.key); // one data plane: the bound is exact there (other replicas add their spend within 250 ms)
      const saved = mock.fallback;
      mock.fallback = { ...saved, delayMs: 100 };
      let ok = 0;
      let quotaRefusals = 0;
      let concurrencyRefusals = 0;
      const ids: string[] = [];
      try {
        await Promise.all(
          Array.from({ length: 200 }, async () => {
            for (;;) {
              try {
                const { response } = await ask(c);
                ids.push(response.headers.get("x-gateway-request-id")!);
                ok++;
                return;
              } catch (e) {
                const code = (e as { code?: string }).code;
                if (code === "insufficient_quota") return void quotaRefusals++;
                if (code !== "rate_limit_exceeded") throw e;
                concurrencyRefusals++;
                // A client backing off after the concurrency 429, with jitter, as the load it models would: this
                // paces the load loop, it waits for no event of the gateway's.
                await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
              }
            }
          }),
        );
      } finally {
        mock.fallback = saved;
      }
      expect(ok + quotaRefusals).toBe(200);
      const burstOverrun = BigInt(ok) * COST - QUOTA;
      // Calls in flight hold their estimates (these name no max_tokens: 4096 output tokens each, 1000 used), so
      // part of the burst may be refused while money is left; one call at a time then uses the rest.
      let after = 0;
      for (;;) {
        const res = await ask(c).catch((e: unknown) => e);
        if (res instanceof OpenAI.APIError && res.code === "insufficient_quota") break;
        if (res instanceof Error) throw res;
        ids.push((res as Awaited<ReturnType<typeof ask>>).response.headers.get("x-gateway-request-id")!);
        ok++;
        after++;
      }
      const spent = BigInt(ok) * COST;
      const overrun = spent - QUOTA;
      console.log(
        `[${mode}] quota burst: ${ok - after} served, ${quotaRefusals} insufficient_quota, ${concurrencyRefusals} concurrency 429s, overrun ${burstOverrun} micro; then ${after} one at a time; overrun ${overrun} micro = ${Number(overrun) / Number(COST)} calls (bound: one call = ${COST} micro)`,
      );
      expect(spent).toBeGreaterThanOrEqual(QUOTA); // the quota was usable to the end
      // Reservations: at most one call past the quota (the last call may go alone with anything left).
      expect(burstOverrun).toBeLessThanOrEqual(COST);
      expect(overrun).toBeLessThanOrEqual(COST);
      // Billed exactly: one usage row per served call, the key's spend and the wallet moved by exactly that.
      expected.set("burst", expected.get("burst")! - spent);
      await nothingChargedFor("burst");
      const rows = (await gw.usage("burst")).filter((r) => r.keyId === k.id);
      expect(rows.map((r) => r.requestId).sort()).toEqual([...ids].sort());
      expect(rows.reduce((s, r) => s + r.costMicro, 0n)).toBe(spent);
      const listed = (await gw.admin<{ id: string; spent: string }[]>("key list", { account: "burst" })).find(
        (x) => x.id === k.id,
      )!;
      expect(BigInt(Math.round(Number(listed.spent) * 1e6))).toBe(spent);
    });

    // Distributed mode only: embedded mode has one process, whose in-process limiter the tests above cover.
    if (mode === "distributed")
      it("two replicas together hold an rpm limit within 5%", async () => {
        const LIMIT = 120;
        await openAccount("rpm-shared", "100");
        const k = await newKey("rpm-shared", { rpm: String(LIMIT) });
        const clients = gw.bases.map((b) => sdk(k.key, b));
        expect(clients.length).toBe(2);
        let ok = 0;
        let limited = 0;
        const started = Date.now();
        // 240 calls, alternating replicas, 40 at a time.
        let next = 0;
        await Promise.all(
          Array.from({ length: 40 }, async () => {
            while (next < 240) {
              const i = next++;
              try {
                await ask(clients[i % 2]!);
                ok++;
              } catch (e) {
                if ((e as { code?: string }).code !== "rate_limit_exceeded") throw e;
                limited++;
              }
            }
          }),
        );
        const elapsed = Date.now() - started;
        // GCRA: a burst of LIMIT, then one more every 60 s / LIMIT while the burst lasts.
        const ideal = LIMIT + Math.floor((elapsed * LIMIT) / 60_000);
        console.log(
          `[${mode}] rpm ${LIMIT} over 2 replicas: ${ok} served, ${limited} refused in ${elapsed} ms (ideal ≤ ${ideal}); deviation ${(((ok - ideal) / LIMIT) * 100).toFixed(1)}%`,
        );
        expect(ok + limited).toBe(240);
        expect(ok).toBeGreaterThanOrEqual(Math.floor(LIMIT * 0.95));
        expect(ok).toBeLessThanOrEqual(Math.ceil(ideal + LIMIT * 0.05));
        expected.set("rpm-shared", expected.get("rpm-shared")! - BigInt(ok) * COST);
        await nothingChargedFor("rpm-shared");
      });
  });
});
