import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleUsageBatch } from "../../../control-plane/src/usage/settle.ts";
import { usageEvent } from "../../helpers/usage-event.ts";
import { type Client, customer, operatorClient, startHarness, type Harness } from "./harness.ts";

// Budgets in GraphQL: owners set their account's and keys' budgets within the operator's caps, operators
// anywhere; a new cap lowers what is above it; what is left and when it resets; the account's time zone.

let h: Harness;
let ops: Client;
let a: Awaited<ReturnType<typeof customer>>;
let keyId: string;

const BUDGETS = `budgets { period limit spent remaining startsAt resetsAt }`;

beforeAll(async () => {
  h = await startHarness("gql_budgets");
  ops = await operatorClient(h);
  a = await customer(h, ops, "Budgeter");
  keyId = (await a.client.gql(`mutation { createApiKey(input: { name: "svc" }) { apiKey { id } } }`)).createApiKey
    .apiKey.id;
});
afterAll(async () => {
  await h?.close();
});

describe("budgets", () => {
  it("owners set the account's and a key's budgets; each shows what is left and when it resets", async () => {
    const before = h.snapshotChanges();
    const acct = await a.client.gql(
      `mutation { setAccountBudgets(input: { daily: "2", monthly: "30" }) { ${BUDGETS} } }`,
    );
    expect(acct.setAccountBudgets.budgets.map((b: { period: string; limit: string }) => [b.period, b.limit])).toEqual([
      ["day", "2"],
      ["month", "30"],
    ]);
    expect(h.snapshotChanges()).toBeGreaterThan(before);
    await a.client.gql(`mutation($id: ID!) { setApiKeyBudgets(id: $id, input: { daily: "1" }) { id } }`, { id: keyId });
    // 0.25 settled today on the key
    await settleUsageBatch(h.db, [
      {
        ...usageEvent(1),
        requestId: "b-1",
        accountId: a.accountId,
        keyId,
        cost: "250000",
        startedAt: new Date().toISOString(),
      },
    ]);
    const key = await a.client.gql(`query($id: ID!) { apiKey(id: $id) { ${BUDGETS} } }`, { id: keyId });
    const day = key.apiKey.budgets[0];
    expect(day).toMatchObject({ period: "day", limit: "1", spent: "0.25", remaining: "0.75" });
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(day.resetsAt).toBe(midnight.toISOString());
    const account = await a.client.gql(`{ account { timeZone ${BUDGETS} } }`);
    expect(account.account.timeZone).toBe("UTC");
    expect(account.account.budgets[1]).toMatchObject({ period: "month", spent: "0.25", remaining: "29.75" });
    // omitted stays, null removes
    const removed = await a.client.gql(`mutation { setAccountBudgets(input: { daily: null }) { ${BUDGETS} } }`);
    expect(removed.setAccountBudgets.budgets.map((b: { period: string }) => b.period)).toEqual(["month"]);
    expect(await a.client.code(`mutation { setAccountBudgets(input: { weekly: "0" }) { id } }`)).toBe("BAD_USER_INPUT");
    expect(await a.client.code(`mutation { setAccountBudgets(input: { weekly: "abc" }) { id } }`)).toBe(
      "BAD_USER_INPUT",
    );
  });

  it("operators cap what owners set; a new cap lowers budgets above it", async () => {
    expect(
      await a.client.code(
        `mutation($a: ID!) { setAccountBudgetCaps(accountId: $a, input: { monthly: "10" }) { id } }`,
        { a: a.accountId },
      ),
    ).toBe("FORBIDDEN");
    const capped = await ops.gql(
      `mutation($a: ID!) { setAccountBudgetCaps(accountId: $a, input: { monthly: "10", daily: "3" }) { budgetCaps { daily weekly monthly } ${BUDGETS} } }`,
      { a: a.accountId },
    );
    expect(capped.setAccountBudgetCaps.budgetCaps).toEqual({ daily: "3", weekly: null, monthly: "10" });
    // the account's monthly 30 came down to 10; its missing daily budget became the cap
    expect(
      capped.setAccountBudgetCaps.budgets.map((b: { period: string; limit: string }) => [b.period, b.limit]),
    ).toEqual([
      ["day", "3"],
      ["month", "10"],
    ]);
    expect(await a.client.code(`mutation { setAccountBudgets(input: { monthly: "11" }) { id } }`)).toBe("FORBIDDEN");
    expect(await a.client.code(`mutation { setAccountBudgets(input: { monthly: null }) { id } }`)).toBe("FORBIDDEN");
    expect(
      (await a.client.gql(`mutation { setAccountBudgets(input: { monthly: "9", weekly: "5" }) { id } }`))
        .setAccountBudgets.id,
    ).toBe(a.accountId);
    expect(
      await a.client.code(`mutation($id: ID!) { setApiKeyBudgets(id: $id, input: { daily: "4" }) { id } }`, {
        id: keyId,
      }),
    ).toBe("FORBIDDEN");
    // a key may go without a budget under a cap (the account's holds); the operator may exceed the caps
    await a.client.gql(`mutation($id: ID!) { setApiKeyBudgets(id: $id, input: { daily: null }) { id } }`, {
      id: keyId,
    });
    await ops.gql(`mutation($a: ID!) { setAccountBudgets(accountId: $a, input: { monthly: "50" }) { id } }`, {
      a: a.accountId,
    });
    await ops.gql(`mutation($id: ID!) { setApiKeyBudgets(id: $id, input: { daily: "7" }) { id } }`, { id: keyId });
    await ops.gql(`mutation($a: ID!) { setAccountBudgetCaps(accountId: $a, input: { daily: "2" }) { id } }`, {
      a: a.accountId,
    });
    const key = await a.client.gql(`query($id: ID!) { apiKey(id: $id) { budgets { period limit } } }`, { id: keyId });
    expect(key.apiKey.budgets).toEqual([{ period: "day", limit: "2" }]);
  });

  it("sets the account's time zone (an IANA name) and periods follow it", async () => {
    expect(await a.client.code(`mutation { setAccountTimeZone(timeZone: "Mars/Olympus") { id } }`)).toBe(
      "BAD_USER_INPUT",
    );
    const r = await a.client.gql(
      `mutation { setAccountTimeZone(timeZone: "Asia/Tokyo") { timeZone budgets { period startsAt } } }`,
    );
    expect(r.setAccountTimeZone.timeZone).toBe("Asia/Tokyo");
    const day = r.setAccountTimeZone.budgets.find((b: { period: string }) => b.period === "day");
    expect(new Date(day.startsAt).getUTCHours()).toBe(15); // local midnight in Tokyo is 15:00 UTC
  });

  it("keeps other accounts out", async () => {
    const b = await customer(h, ops, "Stranger");
    expect(
      await b.client.code(`mutation($id: ID!) { setApiKeyBudgets(id: $id, input: { daily: "1" }) { id } }`, {
        id: keyId,
      }),
    ).toBe("NOT_FOUND");
    expect(
      await b.client.code(`mutation($a: ID) { setAccountBudgets(accountId: $a, input: { daily: "1" }) { id } }`, {
        a: a.accountId,
      }),
    ).toBe("FORBIDDEN");
  });
});
