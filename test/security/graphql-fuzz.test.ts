import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";

// Property-based fuzzing of /graphql (issue 12, item 11 and the fuzzing requirement): thousands of generated bad
// inputs, as an operator and as an account owner, into the operations that take free-form values (money
// amounts, cursors, ids, dates, time zones, CIDRs, page sizes), plus broken bodies. Whatever comes in, the answer
// is never a 5xx and never INTERNAL_SERVER_ERROR; every error carries a stable code and the request id of the
// X-Gateway-Request-Id header.

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
let gw: Gateway;
let base: string;
let operator: string;
let owner: string;
let accountId: string;
let tried = 0;

async function signIn(email: string, password: string): Promise<string> {
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": `192.0.2.${Math.floor(Math.random() * 200) + 1}`,
    },
    body: JSON.stringify({
      query: "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired } }",
      variables: { e: email, p: password },
    }),
  });
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("mg_session="));
  if (!cookie) throw new Error(`sign-in failed: ${await res.text()}`);
  return cookie.split(";")[0]!;
}

beforeAll(async () => {
  gw = await startGateway("embedded", { config: {}, env: { MODELGATE_OPERATOR_PASSWORD: "operator-password-1" } });
  base = gw.bases[0]!;
  accountId = (await gw.admin<{ id: string }>("account create", { name: "acme", balance: "5" })).id;
  await gw.admin("user create", {
    email: "owner@acme.test",
    password: "Owner-Password-1",
    role: "owner",
    account: "acme",
  });
  operator = await signIn("operator@modelgate.local", "operator-password-1");
  owner = await signIn("owner@acme.test", "Owner-Password-1");
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  console.log(`graphql fuzz: ${tried} requests`);
});

/** Sends a body and checks the one property: a 4xx or a 200, every error coded and carrying the request id. */
async function probe(body: string, headers: Record<string, string>): Promise<void> {
  tried++;
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  const id = res.headers.get("x-gateway-request-id");
  expect(res.status, text).toBeLessThan(500);
  expect(id).toMatch(/^req_[0-9a-f]{24}$/);
  const parsed = JSON.parse(text) as {
    errors?: { message: string; extensions?: { code?: string; requestId?: string } }[];
  };
  for (const e of parsed.errors ?? []) {
    expect(e.extensions?.code, text).toBeDefined();
    expect(e.extensions?.code, text).not.toBe("INTERNAL_SERVER_ERROR");
    expect(e.extensions?.requestId, text).toBe(id);
  }
}

// Values a caller might send where the schema says String, ID, DateTime, Int or a list.
const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "-1",
    "0",
    "1e400",
    "NaN",
    "Infinity",
    "99999999999999999999",
    "9223372036854775808",
    "-9223372036854775809",
    "0.0000001",
    "1.2.3",
    "12,5",
    "١٢٣",
  ),
  fc.constantFrom(
    "not-a-uuid",
    "00000000-0000-0000-0000-000000000000",
    "'; drop table users; --",
    "%00",
    "\u0000",
    "🙂".repeat(50),
  ),
  fc.constantFrom(
    "2026-13-45T99:99:99Z",
    "yesterday",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "+275760-09-13T00:00:00Z",
  ),
  fc.constantFrom("Mars/Olympus", "UTC+99", "../../etc/passwd", "Europe/Paris"),
  fc.constantFrom("300.1.1.1/8", "::/129", "10.0.0.0/33", "fe80::%eth0", "1.2.3.4/-1", "0.0.0.0/0"),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.base64String({ maxLength: 40 }),
);
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  nasty,
  fc.integer(),
  fc.double(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_VALUE),
  fc.boolean(),
  fc.constant(null),
  fc.array(nasty, { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), nasty, { maxKeys: 3 }),
);

const OPERATIONS: { who: "operator" | "owner"; query: string; vars: string[] }[] = [
  {
    who: "owner",
    query: "query($a: String, $n: Int) { usage(after: $a, first: $n) { nodes { requestId } endCursor } }",
    vars: ["a", "n"],
  },
  {
    who: "owner",
    query: "query($a: String, $n: Int) { ledger(after: $a, first: $n) { nodes { amount } } }",
    vars: ["a", "n"],
  },
  {
    who: "owner",
    query:
      "query($f: DateTime, $t: DateTime, $z: String, $k: ID) { usageStats(from: $f, to: $t, timeZone: $z, apiKeyId: $k) { series { requests } } }",
    vars: ["f", "t", "z", "k"],
  },
  {
    who: "owner",
    query: "query($f: UsageFilter) { usage(filter: $f, first: 5) { nodes { requestId } } }",
    vars: ["f"],
  },
  {
    who: "owner",
    query:
      "mutation($n: String, $q: String, $m: [String!], $ip: [String!], $r: Int, $e: DateTime) { createApiKey(input: { name: $n, quotaCap: $q, allowedModels: $m, ipAllowlist: $ip, rpm: $r, expiresAt: $e }) { apiKey { id } } }",
    vars: ["n", "q", "m", "ip", "r", "e"],
  },
  { who: "owner", query: "query($id: ID!) { apiKey(id: $id) { id } }", vars: ["id"] },
  {
    who: "owner",
    query: "mutation($id: ID!, $q: String) { updateApiKey(id: $id, input: { quotaCap: $q }) { id } }",
    vars: ["id", "q"],
  },
  {
    who: "operator",
    query:
      "mutation($a: ID!, $x: String!, $note: String) { topUp(accountId: $a, amount: $x, note: $note) { balance } }",
    vars: ["a", "x", "note"],
  },
  {
    who: "operator",
    query:
      "mutation($a: ID!, $x: String!, $note: String!) { adjustBalance(accountId: $a, amount: $x, note: $note) { balance } }",
    vars: ["a", "x", "note"],
  },
  {
    who: "operator",
    query:
      "mutation($a: ID!, $r: Int, $t: Int, $c: Int) { setAccountLimits(accountId: $a, rpm: $r, tpm: $t, concurrency: $c) { id } }",
    vars: ["a", "r", "t", "c"],
  },
  {
    who: "operator",
    query:
      "mutation($a: ID!, $e: DateTime!, $q: String!) { setTrialPolicy(accountId: $a, expiresAt: $e, quota: $q) { id } }",
    vars: ["a", "e", "q"],
  },
  {
    who: "operator",
    query: "mutation($i: PriceContractInput!) { setPriceContract(input: $i) { modelId } }",
    vars: ["i"],
  },
  {
    who: "operator",
    query: "query($n: Int, $o: Int, $s: String) { accounts(first: $n, offset: $o, search: $s) { nodes { id } } }",
    vars: ["n", "o", "s"],
  },
];

describe("GraphQL fuzzing: never a 5xx, always a coded error with the request id", () => {
  it.each(OPERATIONS.map((o) => [o.query.slice(0, 60), o] as const))("%s…", async (_name, op) => {
    const cookie = op.who === "operator" ? operator : owner;
    // the account id is right half the time, so the deeper checks run too
    const value = (name: string) => (name === "a" ? fc.oneof(fc.constant(accountId), anyValue) : anyValue);
    const vars = fc.record(
      Object.fromEntries(op.vars.map((v) => [v, value(v)])) as Record<string, fc.Arbitrary<unknown>>,
    );
    await fc.assert(
      fc.asyncProperty(vars, async (variables) => {
        await probe(JSON.stringify({ query: op.query, variables }), { cookie });
      }),
      { numRuns: RUNS },
    );
  });

  it("the inputs that were server errors before: a non-UUID cursor, a quota and a top-up beyond BIGINT", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["query($a: String) { usage(after: $a, first: 5) { nodes { requestId } } }", { a: "not-a-uuid" }, owner],
      ["query($a: String) { ledger(after: $a, first: 5) { nodes { amount } } }", { a: "not-a-uuid" }, owner],
      [
        'mutation($q: String) { createApiKey(input: { name: "big", quotaCap: $q }) { apiKey { id } } }',
        { q: "99999999999999999999" },
        owner,
      ],
      [
        "mutation($a: ID!, $x: String!) { topUp(accountId: $a, amount: $x) { balance } }",
        { a: accountId, x: "99999999999999999999" },
        operator,
      ],
      [
        "mutation($a: ID!, $x: String!) { topUp(accountId: $a, amount: $x) { balance } }",
        { a: accountId, x: "9223372036854.775807" },
        operator,
      ],
      [
        'mutation($a: ID!, $x: String!) { adjustBalance(accountId: $a, amount: $x, note: "n") { balance } }',
        { a: accountId, x: "-99999999999999999999" },
        operator,
      ],
    ];
    for (const [query, variables, cookie] of cases) {
      const res = await fetch(`${base}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as { errors?: { extensions?: { code?: string } }[] };
      expect(body.errors?.[0]?.extensions?.code, JSON.stringify({ query, body })).toBe("BAD_USER_INPUT");
    }
  });

  it("broken bodies, odd variables and documents", async () => {
    const body = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.json({ maxDepth: 4 }),
      fc
        .record({
          query: fc.string({ maxLength: 100 }),
          variables: fc.oneof(fc.string(), fc.json({ maxDepth: 2 })),
          operationName: fc.oneof(fc.string(), fc.integer()),
        })
        .map((o) => JSON.stringify(o)),
      fc.constantFrom(
        "[",
        "{",
        "null",
        "[]",
        "[{}]",
        '{"query": null}',
        '{"query": 1}',
        `{"query": "${"{".repeat(5000)}"}`,
        `{"query":"{ me { user { email } } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"x"}}}`,
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(owner, ""), async (b, cookie) => {
        await probe(b, cookie ? { cookie } : {});
      }),
      { numRuns: RUNS * 3 },
    );
  });
});
