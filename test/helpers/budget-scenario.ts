import { writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { expect } from "vitest";
import { verify } from "../../control-plane/src/alerts/signature.ts";
import { type Gateway, waitForKey } from "./gateway.ts";
import { eventually } from "./processes.ts";

// Budgets end to end, the same in both modes (test/embedded/budgets.test.ts, test/services/budgets.test.ts):
// a key's daily budget and an account's, refused with 429 budget_exceeded in each client protocol's shape,
// then a period reset crossed by moving the test clock (MODELGATE_TEST_CLOCK_FILE, read by every process).
// Alongside, the control plane's alerts: the budget's 100% alert reaches a local webhook receiver (signature
// checked) once for the first day and once more for the next, after real calls settled.

export const OPERATOR = { email: "ops@budget.test", password: "operator-password-budget-1" };
export const operatorEnv = { MODELGATE_OPERATOR_EMAIL: OPERATOR.email, MODELGATE_OPERATOR_PASSWORD: OPERATOR.password };

/** The operator signed in to the control plane's GraphQL (cookie session). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read loosely typed GraphQL results
type Data = Record<string, any>;
async function operatorGraphql(
  base: string,
): Promise<(query: string, variables?: Record<string, unknown>) => Promise<Data>> {
  let cookie = "";
  const send = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${base}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    const set = res.headers.getSetCookie().find((c) => c.startsWith("mg_session="));
    if (set) cookie = set.split(";")[0]!;
    const body = (await res.json()) as { data?: Data; errors?: unknown[] };
    if (body.errors?.length) throw new Error(`GraphQL: ${JSON.stringify(body.errors)}`);
    return body.data!;
  };
  await send(`mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }`, {
    e: OPERATOR.email,
    p: OPERATOR.password,
  });
  return send;
}

/** A webhook receiver that records every request. */
class Receiver {
  readonly requests: { headers: IncomingHttpHeaders; body: string }[] = [];
  private server!: Server;
  url = "";
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        this.requests.push({ headers: req.headers, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/alerts`;
  }
  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

export const BUDGET_MODEL = "gpt-4o-mini-2024-07-18";
// Prices per 1M tokens: input 1, output 2; the mock answers 1000 + 1000 tokens: 3000 micro a call.
export const CALL_COST = 3000n;

export const budgetConfig = (mockUrl: string) => ({
  upstreams: [{ name: "mock", protocol: "openai", baseUrl: mockUrl, apiKey: "${BUDGET_UPSTREAM_KEY}" }],
  models: [
    {
      id: BUDGET_MODEL,
      reasoning: false,
      price: { input: 1, output: 2 },
      routes: [{ upstream: "mock", model: "gpt-4o-mini", weight: 1 }],
    },
  ],
});

interface BudgetView {
  period: string;
  limit: string;
  spent: string;
  remaining: string;
  resetsAt: string;
}

const DAY = 86_400_000;
const nextUtcMidnight = (t: number) => Math.floor(t / DAY) * DAY + DAY;

export interface BudgetScenario {
  gw: Gateway;
  clockFile: string;
  /** the offset the test clock has now (ms) */
  offset: number;
}

const sdk = (base: string, key: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const ask = (base: string, key: string) =>
  sdk(base, key).chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "hi" }] });

type Outcome =
  | { ok: true }
  | { ok: false; status: number; code: string | null; message: string; requestId: string | null; retry: string | null };

async function call(base: string, key: string): Promise<Outcome> {
  try {
    await ask(base, key);
    return { ok: true };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
    return {
      ok: false,
      status: e.status ?? 0,
      code: e.code ?? null,
      message: e.message,
      requestId: e.headers?.get("x-gateway-request-id") ?? null,
      retry: e.headers?.get("x-should-retry") ?? null,
    };
  }
}

/** Calls round-robin over the replicas until one is refused; returns how many went through and the refusal. */
async function spendUntilRefused(
  gw: Gateway,
  key: string,
  max = 12,
): Promise<{ served: number; refusal: Extract<Outcome, { ok: false }> }> {
  for (let i = 0; i < max; i++) {
    const r = await call(gw.bases[i % gw.bases.length]!, key);
    if (!r.ok) return { served: i, refusal: r };
  }
  throw new Error(`no refusal after ${max} calls`);
}

function expectBudgetRefusal(r: Extract<Outcome, { ok: false }>, period: string, resetsAt: number): void {
  expect(r.status).toBe(429);
  expect(r.code).toBe("budget_exceeded");
  expect(r.message).toContain(`${period} budget`);
  expect(r.message).toContain(`resets at ${new Date(resetsAt).toISOString()}`);
  expect(r.requestId).toMatch(/^req_/);
  expect(r.message).toContain(`(request id: ${r.requestId})`);
  expect(r.retry).toBe("false");
}

/** Every replica refuses the key (after settlement and the snapshot reached them all). */
async function refusedEverywhere(gw: Gateway, key: string): Promise<Extract<Outcome, { ok: false }>[]> {
  const out: Extract<Outcome, { ok: false }>[] = [];
  for (const base of gw.bases) {
    const r = await eventually(
      () => call(base, key),
      (o) => !o.ok,
      15_000,
      100,
    );
    if (r.ok) throw new Error("unreachable");
    out.push(r);
  }
  return out;
}

async function settled(gw: Gateway, account: string, n: number): Promise<void> {
  try {
    await eventually(
      () => gw.usage(account),
      (rows) => rows.filter((r) => r.status === 200).length >= n,
      15_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${gw.procs.map((p) => p.output().slice(-3000)).join("\n---\n")}`);
  }
}

export async function runBudgetScenario(s: BudgetScenario): Promise<void> {
  const receiver = new Receiver();
  await receiver.start();
  try {
    await scenario(s, receiver);
  } finally {
    await receiver.close();
  }
}

async function scenario(s: BudgetScenario, receiver: Receiver): Promise<void> {
  const { gw } = s;
  const now = () => Date.now() + s.offset;
  const created = await gw.admin<{ id: string }>("account create", { name: "budgeted", balance: "100" });
  const gql = await operatorGraphql(gw.controlPlaneBase);
  await gql(`mutation($a: ID!) { setAlertSettings(accountId: $a, input: { percents: [50, 100] }) { percents } }`, {
    a: created.id,
  });
  const secret = (
    await gql(`mutation($a: ID!, $u: String!) { addAlertWebhook(accountId: $a, url: $u) { secret } }`, {
      a: created.id,
      u: receiver.url,
    })
  ).addAlertWebhook.secret as string;
  const budgetAlerts = () =>
    receiver.requests.map((r) => {
      expect(
        verify(secret, String(r.headers["x-modelgate-timestamp"]), r.body, String(r.headers["x-modelgate-signature"])),
      ).toBe(true);
      return JSON.parse(r.body) as { type: string; data: { threshold: number; period: string; resetsAt: string } };
    });
  const k = await gw.admin<{ id: string; key: string }>("key create", { account: "budgeted", name: "daily" });
  // 3 calls a day: 9000 micro
  const set = await gw.admin<{ budgets: BudgetView[] }>("budget set", {
    account: "budgeted",
    key: k.id,
    daily: "0.009",
  });
  expect(set.budgets).toEqual([
    expect.objectContaining({ period: "day", limit: "0.009", spent: "0", remaining: "0.009" }),
  ]);
  await waitForKey(gw, k.key);
  await eventually(
    async () =>
      (await gw.admin<{ budgets: BudgetView[] }>("budget show", { account: "budgeted", key: k.id })).budgets.length,
    (n) => n === 1,
  );

  // Day 1: the budget runs out. Sequential calls over the replicas; with several replicas one more may pass
  // (each reads the shared counters through a 250 ms cache: the documented overrun bound).
  const day1 = await spendUntilRefused(gw, k.key);
  expect(day1.served).toBeGreaterThanOrEqual(3);
  expect(day1.served).toBeLessThanOrEqual(3 + (gw.bases.length - 1));
  expectBudgetRefusal(day1.refusal, "daily", nextUtcMidnight(now()));
  await settled(gw, "budgeted", day1.served);
  for (const r of await refusedEverywhere(gw, k.key)) expectBudgetRefusal(r, "daily", nextUtcMidnight(now()));
  // The control plane evaluated the settled spend: the first day's 100% is sent once (and 50% at most once
  // before it, when settlement happened to take the calls in more than one batch).
  const day1End = new Date(nextUtcMidnight(now())).toISOString();
  const sentFor = (l: ReturnType<typeof budgetAlerts>, resetsAt: string) =>
    l.filter((a) => a.type === "budget" && a.data.resetsAt === resetsAt).map((a) => a.data.threshold);
  const day1Sent = sentFor(
    await eventually(
      async () => budgetAlerts(),
      (l) => l.some((a) => a.data.threshold === 100),
      15_000,
    ),
    day1End,
  );
  expect([[100], [50, 100]]).toContainEqual(day1Sent);
  const shown = await gw.admin<{ budgets: BudgetView[] }>("budget show", { account: "budgeted", key: k.id });
  expect(shown.budgets[0]).toMatchObject({
    period: "day",
    spent: ((Number(CALL_COST) * day1.served) / 1e6).toString(),
    remaining: "0",
    resetsAt: new Date(nextUtcMidnight(now())).toISOString(),
  });

  // The other protocols' shapes: Anthropic's rate_limit_error, Gemini's RESOURCE_EXHAUSTED.
  const anthropic = new Anthropic({ baseURL: gw.bases[0]!, apiKey: k.key, maxRetries: 0 });
  const aErr = await anthropic.messages
    .create({ model: BUDGET_MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(aErr).toBeInstanceOf(Anthropic.APIError);
  expect((aErr as InstanceType<typeof Anthropic.APIError>).status).toBe(429);
  expect((aErr as { error: { error: { type: string; message: string } } }).error.error).toMatchObject({
    type: "rate_limit_error",
    message: expect.stringContaining("daily budget"),
  });
  const g = await fetch(`${gw.bases[0]}/v1beta/models/${BUDGET_MODEL}:generateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": k.key, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
  });
  expect(g.status).toBe(429);
  expect(((await g.json()) as { error: { status: string; message: string } }).error).toMatchObject({
    status: "RESOURCE_EXHAUSTED",
    message: expect.stringContaining("daily budget"),
  });

  // An account budget holds every key of the account: a second key is refused once the account's is spent.
  await gw.admin("account create", { name: "capped", balance: "100" });
  const k1 = await gw.admin<{ id: string; key: string }>("key create", { account: "capped", name: "one" });
  const k2 = await gw.admin<{ id: string; key: string }>("key create", { account: "capped", name: "two" });
  await gw.admin("budget set", { account: "capped", weekly: "0.006" });
  await waitForKey(gw, k1.key);
  await waitForKey(gw, k2.key);
  const acct = await spendUntilRefused(gw, k1.key);
  expect(acct.served).toBeGreaterThanOrEqual(2);
  expect(acct.refusal.message).toContain("The account has used up its weekly budget");
  await settled(gw, "capped", acct.served);
  for (const r of await refusedEverywhere(gw, k2.key)) expect(r.message).toContain("weekly budget");

  // Cross midnight (UTC) by moving the test clock of every process: the key's daily budget is whole again.
  const cross = nextUtcMidnight(now()) + 1_000 - Date.now();
  s.offset = cross;
  writeFileSync(s.clockFile, String(cross));
  for (const base of gw.bases)
    await eventually(
      () => call(base, k.key),
      (o) => o.ok,
      15_000,
      100,
    );
  const afterReset = gw.bases.length; // one call went through on each replica above
  const day2 = await spendUntilRefused(gw, k.key);
  const day2Served = afterReset + day2.served;
  expect(day2Served).toBeGreaterThanOrEqual(3);
  expect(day2Served).toBeLessThanOrEqual(3 + (gw.bases.length - 1));
  expectBudgetRefusal(day2.refusal, "daily", nextUtcMidnight(now()));
  await settled(gw, "budgeted", day1.served + day2Served);
  for (const r of await refusedEverywhere(gw, k.key)) expectBudgetRefusal(r, "daily", nextUtcMidnight(now()));
  // The new day's settled spend is only the new day's calls.
  const next = await gw.admin<{ budgets: BudgetView[] }>("budget show", { account: "budgeted", key: k.id });
  expect(next.budgets[0]).toMatchObject({
    spent: ((Number(CALL_COST) * day2Served) / 1e6).toString(),
    resetsAt: new Date(nextUtcMidnight(now())).toISOString(),
  });
  // The new day's 100% alert: once more, for the new period; the first day's were not sent again.
  const day2End = new Date(nextUtcMidnight(now())).toISOString();
  const alerts = await eventually(
    async () => budgetAlerts(),
    (l) => sentFor(l, day2End).includes(100),
    15_000,
  );
  expect([[100], [50, 100]]).toContainEqual(sentFor(alerts, day2End));
  expect(sentFor(alerts, day1End)).toEqual(day1Sent);
  // Every served call was charged exactly once, and no refusal was.
  const rows = await gw.usage("budgeted");
  expect(rows.filter((r) => r.status === 200).length).toBe(day1.served + day2Served);
  expect(await gw.balance("budgeted")).toBe(100_000_000n - CALL_COST * BigInt(day1.served + day2Served));
}
