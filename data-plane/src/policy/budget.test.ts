import { describe, expect, it } from "vitest";
import { makeAccount, makeKey } from "../billing/spend.suite.ts";
import { BudgetCalendar } from "../billing/periods.ts";
import { checkKeyPolicy } from "./check.ts";

const at = (s: string) => Date.parse(s);
const day = (limit: string, spent: string) => ({
  limit,
  spent,
  start: "2026-11-25T00:00:00.000Z",
  end: "2026-11-26T00:00:00.000Z",
});

function decide(opts: {
  keyDay?: [string, string];
  accountDay?: [string, string];
  keySpent?: bigint;
  accountSpent?: bigint;
  now: string;
  timeZone?: string;
}) {
  const account = {
    ...makeAccount("0"),
    ...(opts.timeZone ? { timeZone: opts.timeZone } : {}),
    ...(opts.accountDay ? { budgets: { day: day(...opts.accountDay) } } : {}),
  };
  const key = { ...makeKey(account.id), ...(opts.keyDay ? { budgets: { day: day(...opts.keyDay) } } : {}) };
  const now = at(opts.now);
  return checkKeyPolicy({
    key,
    account,
    model: "m",
    clientIp: null,
    now,
    spend: { keySpent: opts.keySpent ?? 0n, accountSpent: opts.accountSpent ?? 0n },
    calendar: new BudgetCalendar(() => now),
  });
}

describe("budgets in the key policy", () => {
  it("let a call through while anything is left", () => {
    expect(decide({ keyDay: ["100", "60"], keySpent: 39n, now: "2026-11-25T12:00:00Z" })).toBeNull();
  });

  it("refuse with 429 budget_exceeded naming the period and its reset once settled + unsettled reach the limit", () => {
    const err = decide({ keyDay: ["100", "60"], keySpent: 40n, now: "2026-11-25T12:00:00Z" })!;
    expect(err.status).toBe(429);
    expect(err.code).toBe("budget_exceeded");
    expect(err.message).toContain("daily budget");
    expect(err.message).toContain("2026-11-26T00:00:00.000Z");
    expect(err.headers["x-should-retry"]).toBe("false");
  });

  it("apply the account's budget to every key", () => {
    const err = decide({ accountDay: ["100", "100"], now: "2026-11-25T12:00:00Z" })!;
    expect(err.code).toBe("budget_exceeded");
    expect(err.message).toMatch(/^The account/);
  });

  it("start afresh when the clock passes the snapshot's period, and name the next reset", () => {
    // settled 100 of 100 yesterday; the snapshot has not caught up with the new day
    expect(decide({ keyDay: ["100", "100"], now: "2026-11-26T00:00:01Z" })).toBeNull();
    // unsettled spend counts in the new period
    const err = decide({ keyDay: ["100", "100"], keySpent: 100n, now: "2026-11-26T00:00:01Z" })!;
    expect(err.message).toContain("2026-11-27T00:00:00.000Z");
  });

  it("compute the next reset in the account's time zone", () => {
    const err = decide({
      keyDay: ["100", "100"],
      keySpent: 100n,
      now: "2026-11-26T00:00:01Z",
      timeZone: "Asia/Tokyo",
    })!;
    expect(err.message).toContain("2026-11-26T15:00:00.000Z");
    expect(err.message).toContain("Asia/Tokyo");
  });
});
