import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { type Gateway, waitForKey } from "./gateway.ts";
import { eventually } from "./processes.ts";
import type { Scenario } from "./scenario-suite.ts";
import { type KeyPoolMock, startKeyPoolMock } from "../mocks/key-pool-upstream.ts";

// Upstream key pools end to end (issue 28 points 1–4, 8, 9; docs/routing.md), the same in both modes
// (test/embedded/key-pools.test.ts, test/services/key-pools.test.ts): one mock upstream that answers per key
// (401, 402, insufficient_quota, 429 with retry-after, 5xx), upstreams whose pools draw on it, and calls
// through every data plane. The client never sees a key's refusal; refused keys are recorded, shown and
// alerted; an operator brings a key back.

export const POOL = "pool-chat-2025-01-01"; // keys p1 (weight 2), p2, p3
export const QUOTA = "quota-chat-2025-01-01"; // q1, q2, q3
export const RATE = "rate-chat-2025-01-01"; // r1, r2
export const FLAKY = "flaky-chat-2025-01-01"; // f1, f2
export const SPREAD = "spread-chat-2025-01-01"; // s1, s2, s3 (the replica timing)

const OPERATOR = { email: "ops@pools.test", password: "operator-password-pools-1" };

export interface KeyPoolScenario {
  mock: KeyPoolMock;
  hooks: { server: Server; received: { type: string; data: Record<string, unknown> }[]; url: string };
  close(): Promise<void>;
}

export async function startKeyPoolMocks(): Promise<KeyPoolScenario> {
  const mock = await startKeyPoolMock();
  const received: KeyPoolScenario["hooks"]["received"] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      try {
        received.push(JSON.parse(body) as (typeof received)[number]);
      } catch {
        /* a test send */
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    mock,
    hooks: { server, received, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` },
    close: async () => {
      await mock.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export function keyPoolConfig(s: KeyPoolScenario): { config: unknown; env: NodeJS.ProcessEnv } {
  const pool = (name: string, keys: [string, number][]) => ({
    name,
    protocol: "openai",
    baseUrl: s.mock.url,
    keys: keys.map(([id, weight]) => ({ id, apiKey: `sk-${id}`, weight })),
  });
  const model = (id: string, upstream: string) => ({
    id,
    price: { input: 1, output: 2 },
    routes: [{ upstream, model: "gpt-4o-mini" }],
  });
  return {
    env: {
      MODELGATE_OPERATOR_EMAIL: OPERATOR.email,
      MODELGATE_OPERATOR_PASSWORD: OPERATOR.password,
      MODELGATE_BREAKER_MIN_ACCOUNTS: "1",
      MODELGATE_WEBHOOK_RETRY_MS: "200",
      // Distributed mode: no timed read within a case, so each state change must travel by its announcement
      // (a replica's disable to the others and to the control plane, an enable back to the replicas).
      MODELGATE_KEY_STATE_POLL_MS: "600000",
      MODELGATE_KEY_REPORT_MS: "600000",
    },
    config: {
      upstreams: [
        pool("pool", [
          ["p1", 2],
          ["p2", 1],
          ["p3", 1],
        ]),
        pool("quota", [
          ["q1", 1],
          ["q2", 1],
          ["q3", 1],
        ]),
        pool("rate", [
          ["r1", 1],
          ["r2", 1],
        ]),
        pool("flaky", [
          ["f1", 1],
          ["f2", 1],
        ]),
        pool("spread", [
          ["s1", 1],
          ["s2", 1],
          ["s3", 1],
        ]),
      ],
      models: [
        model(POOL, "pool"),
        model(QUOTA, "quota"),
        model(RATE, "rate"),
        model(FLAKY, "flaky"),
        model(SPREAD, "spread"),
      ],
    },
  };
}

interface KeyState {
  id: string;
  state: string;
  reason: string | null;
  disabledAt: string | null;
}

/** The figures the closing note asks for, filled in by the cases. */
export const measured: {
  errorsWhileRevoked?: number;
  callsWhileRevoked?: number;
  otherReplicaStopMs?: number;
  otherReplicaCallsFirst100Ms?: number;
} = {};

export function keyPoolCases(get: () => { gw: Gateway; s: KeyPoolScenario }): void {
  let key = "";
  let cookie = "";
  let turn = 0;

  async function gql(query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const { gw } = get();
    const res = await fetch(`${gw.controlPlaneBase}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    const set = res.headers.getSetCookie().find((c) => c.startsWith("mg_session="));
    if (set) cookie = set.split(";")[0]!;
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
    if (body.errors?.length) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  }

  /** One call through the next data plane in turn (or `base`); its status and body. */
  async function chat(model: string, base?: string, tag = ""): Promise<{ status: number; text: string }> {
    const { gw } = get();
    const b = base ?? gw.bases[turn++ % gw.bases.length]!;
    const res = await fetch(`${b}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      // a conversation of its own each time: prompt-cache affinity would keep one conversation on one key
      body: JSON.stringify({ model, messages: [{ role: "user", content: `hi ${tag}${turn} ${Math.random()}` }] }),
    });
    return { status: res.status, text: await res.text() };
  }

  async function many(model: string, n: number, concurrency = 8): Promise<{ status: number; text: string }[]> {
    const out: { status: number; text: string }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++;
          out.push(await chat(model));
        }
      }),
    );
    return out;
  }

  const keysOf = async (upstream: string): Promise<KeyState[]> => {
    const health = (await gql(`{ upstreamHealth { name keys { id state reason disabledAt } } }`)).upstreamHealth as {
      name: string;
      keys: KeyState[];
    }[];
    return health.find((h) => h.name === upstream)!.keys;
  };

  it("sets up a customer, an operator session and an operators' webhook", async () => {
    const { gw, s } = get();
    await gw.admin("account create", { name: "pools", balance: "100" });
    key = (await gw.admin<{ key: string }>("key create", { account: "pools" })).key;
    await waitForKey(gw, key);
    await gql(`mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`, {
      e: OPERATOR.email,
      p: OPERATOR.password,
    });
    await gql(`mutation($u: String!) { addAlertWebhook(operators: true, url: $u) { secret } }`, { u: s.hooks.url });
  });

  it("spreads calls over a pool's keys by weight (point 1)", async () => {
    const { s } = get();
    const results = await many(POOL, 200);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    const share = s.mock.served("sk-p1") / 200;
    // p1 has weight 2 of 4: half the calls, give or take what chance makes of 200
    expect(share).toBeGreaterThan(0.38);
    expect(share).toBeLessThan(0.62);
    expect(s.mock.served("sk-p2")).toBeGreaterThan(20);
    expect(s.mock.served("sk-p3")).toBeGreaterThan(20);
  });

  it("takes a revoked key (401) out of the rotation with no error reaching a client, records, shows and alerts it (point 2)", async () => {
    const { gw, s } = get();
    s.mock.behaviour.set("sk-p2", { kind: "status", status: 401 });
    const results = await many(POOL, 150);
    measured.callsWhileRevoked = results.length;
    measured.errorsWhileRevoked = results.filter((r) => r.status !== 200).length;
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    // each data plane asked the revoked key at most until it (or another replica) saw the 401
    const refused = s.mock.requests.filter((r) => r.key === "sk-p2" && r.status === 401).length;
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(refused).toBeLessThanOrEqual(gw.bases.length * 8);
    const before = s.mock.requests.filter((r) => r.key === "sk-p2").length;
    await many(POOL, 40);
    expect(s.mock.requests.filter((r) => r.key === "sk-p2").length).toBe(before);

    const keys = await eventually(
      () => keysOf("pool"),
      (k) => k.find((x) => x.id === "p2")?.state === "disabled",
    );
    expect(keys.find((x) => x.id === "p2")).toMatchObject({ state: "disabled", reason: "unauthorized" });
    expect(keys.find((x) => x.id === "p1")).toMatchObject({ state: "active", reason: null });
    // recorded in the system of record: the catalogue's key is disabled (it survives a Redis flush)
    const upstreams = (await gql(`{ upstreams { name keys { id state reason } } }`)).upstreams as {
      name: string;
      keys: KeyState[];
    }[];
    expect(upstreams.find((u) => u.name === "pool")!.keys.find((k) => k.id === "p2")).toMatchObject({
      state: "disabled",
      reason: "unauthorized",
    });
    const events = await eventually(
      async () =>
        (
          (await gql(`{ alertEvents(operators: true) { kind payload } }`)).alertEvents as {
            kind: string;
            payload: string;
          }[]
        ).filter((e) => e.kind === "upstream_key_disabled"),
      (e) => e.some((x) => JSON.parse(x.payload).key === "p2"),
    );
    // once, however many replicas saw the 401
    expect(events.filter((e) => JSON.parse(e.payload).key === "p2")).toHaveLength(1);
    expect(JSON.parse(events.find((e) => JSON.parse(e.payload).key === "p2")!.payload)).toMatchObject({
      upstream: "pool",
      key: "p2",
      reason: "unauthorized",
    });
    const hook = await eventually(
      async () => s.hooks.received.find((h) => h.type === "upstream_key_disabled" && h.data.key === "p2"),
      (h) => h !== undefined,
      15_000,
    );
    expect(hook!.data).toMatchObject({ upstream: "pool", key: "p2" });
    // the secret never appears in what the operator reads
    expect(JSON.stringify(events)).not.toContain("sk-p2");
  });

  it("uses a key again once an operator enables it", async () => {
    const { s } = get();
    s.mock.behaviour.delete("sk-p2");
    const enabled = (
      await gql(`mutation { setUpstreamKeyEnabled(upstream: "pool", key: "p2", enabled: true) { id state reason } }`)
    ).setUpstreamKeyEnabled;
    expect(enabled).toEqual({ id: "p2", state: "active", reason: null });
    await eventually(
      async () => {
        const before = s.mock.served("sk-p2");
        await many(POOL, 20);
        return s.mock.served("sk-p2") - before;
      },
      (n) => n > 0,
    );
    expect((await keysOf("pool")).find((k) => k.id === "p2")!.state).toBe("active");
  });

  it("the admin CLI's upstream key disable and enable: out of the rotation, and back after the gateway disabled it", async () => {
    const { gw, s } = get();
    await gw.admin("upstream key disable", { upstream: "pool", key: "p3" });
    await eventually(
      () => keysOf("pool"),
      (k) => k.find((x) => x.id === "p3")?.state === "disabled",
    );
    const p3 = () => s.mock.requests.filter((r) => r.key === "sk-p3").length;
    // the published snapshot takes it out (the CLI's change reaches the data planes through the policy feed)
    await eventually(
      async () => {
        const before = p3();
        await many(POOL, 30);
        return p3() - before;
      },
      (n) => n === 0,
    );
    expect((await keysOf("pool")).find((x) => x.id === "p3")).toMatchObject({ reason: "operator" });
    // p1 refused: the gateway disables it; the CLI brings it back once the provider takes it again
    s.mock.behaviour.set("sk-p1", { kind: "status", status: 401 });
    await eventually(
      async () => {
        await many(POOL, 10);
        return keysOf("pool");
      },
      (k) => k.find((x) => x.id === "p1")?.state === "disabled",
    );
    s.mock.behaviour.delete("sk-p1");
    await gw.admin("upstream key enable", { upstream: "pool", key: "p1" });
    await gw.admin("upstream key enable", { upstream: "pool", key: "p3" });
    await eventually(
      async () => {
        const before = s.mock.served("sk-p1") + s.mock.served("sk-p3");
        const results = await many(POOL, 30);
        expect(results.filter((r) => r.status !== 200)).toEqual([]);
        return [s.mock.served("sk-p1") + s.mock.served("sk-p3") - before, (await keysOf("pool")).map((k) => k.state)];
      },
      ([n, states]) => (n as number) > 0 && (states as string[]).every((x) => x === "active"),
    );
  });

  it("disables a key answered 402 or insufficient_quota until an operator enables it (point 4)", async () => {
    const { s } = get();
    s.mock.behaviour.set("sk-q1", { kind: "status", status: 402 });
    s.mock.behaviour.set("sk-q2", { kind: "insufficient_quota" });
    const results = await many(QUOTA, 60);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    const keys = await eventually(
      () => keysOf("quota"),
      (k) => k.filter((x) => x.state === "disabled").length === 2,
    );
    expect(keys.map((k) => [k.id, k.state, k.reason])).toEqual([
      ["q1", "disabled", "payment_required"],
      ["q2", "disabled", "insufficient_quota"],
      ["q3", "active", null],
    ]);
    // the provider accepting the key again does not bring it back by itself
    s.mock.behaviour.delete("sk-q1");
    const before = s.mock.requests.filter((r) => r.key === "sk-q1").length;
    await many(QUOTA, 30);
    expect(s.mock.requests.filter((r) => r.key === "sk-q1").length).toBe(before);
  });

  it("rests a key answered 429 for its retry-after and sends the call to another key (point 3)", async () => {
    const { s } = get();
    s.mock.behaviour.set("sk-r1", { kind: "rate_limited", retryAfterS: 2 });
    const results = await many(RATE, 30);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    const keys = await keysOf("rate");
    expect(keys.find((k) => k.id === "r1")).toMatchObject({ state: "resting", reason: "rate_limited" });
    const limited = s.mock.requests.filter((r) => r.key === "sk-r1" && r.status === 429).length;
    s.mock.behaviour.delete("sk-r1");
    // after its rest the key is used again
    await eventually(
      async () => {
        await many(RATE, 10);
        return s.mock.served("sk-r1");
      },
      (n) => n > 0,
      10_000,
      200,
    );
    expect(limited).toBeGreaterThanOrEqual(1);
    expect((await keysOf("rate")).find((k) => k.id === "r1")!.state).toBe("active");
  });

  it("retries a key's 5xx on another key; the key is not disabled (point 2)", async () => {
    const { s } = get();
    s.mock.behaviour.set("sk-f1", { kind: "status", status: 503 });
    const results = await many(FLAKY, 40);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(s.mock.requests.some((r) => r.key === "sk-f1" && r.status === 503)).toBe(true);
    expect((await keysOf("flaky")).find((k) => k.id === "f1")!.state).toBe("active");
    s.mock.behaviour.delete("sk-f1");
  });

  it("stops another data plane using a key one of them saw refused within a second (point 8)", async () => {
    const { gw, s } = get();
    if (gw.bases.length < 2) {
      // One process: the key leaves this data plane's rotation at once.
      s.mock.behaviour.set("sk-s2", { kind: "refuse_then_ok", times: 1 });
      await eventually(
        async () => (await chat(SPREAD)).status,
        () => s.mock.requests.some((r) => r.key === "sk-s2" && r.status === 401),
        10_000,
        0,
      );
      const after = s.mock.requests.filter((r) => r.key === "sk-s2").length;
      await many(SPREAD, 30);
      expect(s.mock.requests.filter((r) => r.key === "sk-s2").length).toBe(after);
      measured.otherReplicaStopMs = 0;
      return;
    }
    // s2 refuses replica A's calls and serves replica B's (marked): B keeps using it only until it learns of the
    // disable A decided. B is asked continuously, from before A's refusal until well after it.
    const [a, b] = [gw.bases[0]!, gw.bases[1]!];
    s.mock.behaviour.set("sk-s2", { kind: "refuse_unless", prefix: "hi from-b " });
    let stop = false;
    const hammer = (async () => {
      while (!stop) await Promise.all(Array.from({ length: 4 }, () => chat(SPREAD, b, "from-b ")));
    })();
    const fromB = () => s.mock.requests.filter((r) => r.text.startsWith("hi from-b "));
    // B has been using s2
    await eventually(
      async () => fromB().filter((r) => r.key === "sk-s2").length,
      (n) => n > 0,
    );
    await eventually(
      async () => (await chat(SPREAD, a)).status,
      () => s.mock.requests.some((r) => r.key === "sk-s2" && r.status === 401),
      10_000,
      0,
    );
    const refusedAt = s.mock.requests.find((r) => r.key === "sk-s2" && r.status === 401)!.at;
    await eventually(
      async () => fromB().some((r) => r.at > refusedAt + 2_000),
      (later) => later,
    );
    stop = true;
    await hammer;
    const after = fromB().filter((r) => r.at >= refusedAt);
    measured.otherReplicaCallsFirst100Ms = after.filter((r) => r.at - refusedAt < 100).length;
    const lastUse = Math.max(refusedAt, ...after.filter((r) => r.key === "sk-s2").map((r) => r.at));
    measured.otherReplicaStopMs = lastUse - refusedAt;
    // B never saw a refusal of its own, and was asked throughout
    expect(fromB().filter((r) => r.status !== 200)).toEqual([]);
    expect(after.length).toBeGreaterThan(10);
    expect(lastUse - refusedAt).toBeLessThan(1_000);
  });
}

/** The scenario as test/embedded/key-pools.test.ts and test/services/key-pools.test.ts run it. */
export const keyPools: Scenario<KeyPoolScenario> = {
  name: "key pools",
  start: startKeyPoolMocks,
  config: keyPoolConfig,
  cases: keyPoolCases,
  report: (mode) => console.log(`key pools, ${mode}: ${JSON.stringify(measured)}`),
};
