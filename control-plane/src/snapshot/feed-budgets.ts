import { type BudgetCalendar, isMoneyKind, type PolicyChange } from "@modelgate/data-plane";
import { budgetSnapshots } from "../budgets/snapshot.ts";
import type { Db } from "../db/client.ts";
import type { ReadChange } from "./feed-sql.ts";

interface BudgetSide {
  kind: "key" | "account";
  id: string;
  accountId: string;
  status: string;
  tz: string;
  day: string | null;
  week: string | null;
  month: string | null;
}

const big = (s: string | null) => (s === null ? null : BigInt(s));

/**
 * Adds what Postgres could not serialise alone to the entities that need it: an account's time zone (when not
 * UTC) and the current periods' budgets with their settled spend (budgets/snapshot.ts), one query for the whole
 * batch. Entities without a budget pass through untouched. Also returns the time zones seen, whose day turning
 * over means these entities must be published again (their periods changed though their rows did not). A money
 * change (kind key.money or account.money) gets the budgets too: their period spend is what settlement moves.
 */
export async function withBudgets(
  prisma: Db,
  calendar: BudgetCalendar,
  changes: ReadChange[],
): Promise<{ changes: PolicyChange[]; zones: Set<string> }> {
  const zones = new Set<string>();
  const sides = new Map<ReadChange, BudgetSide>();
  for (const c of changes) if (c.budget && c.json !== null) sides.set(c, JSON.parse(c.budget) as BudgetSide);
  if (sides.size === 0) return { changes: changes.map(strip), zones };
  const accounts = new Map<
    string,
    {
      id: string;
      timeZone: string;
      budgetDayMicro: bigint | null;
      budgetWeekMicro: bigint | null;
      budgetMonthMicro: bigint | null;
    }
  >();
  const keys: {
    id: string;
    accountId: string;
    status: string;
    budgetDayMicro: bigint | null;
    budgetWeekMicro: bigint | null;
    budgetMonthMicro: bigint | null;
  }[] = [];
  for (const b of sides.values()) {
    const cols = { budgetDayMicro: big(b.day), budgetWeekMicro: big(b.week), budgetMonthMicro: big(b.month) };
    if (b.kind === "account") accounts.set(b.id, { id: b.id, timeZone: b.tz, ...cols });
    else {
      keys.push({ id: b.id, accountId: b.accountId, status: b.status, ...cols });
      // the key's periods are in its account's zone; an account without a budget of its own adds no subject
      if (!accounts.has(b.accountId))
        accounts.set(b.accountId, {
          id: b.accountId,
          timeZone: b.tz,
          budgetDayMicro: null,
          budgetWeekMicro: null,
          budgetMonthMicro: null,
        });
    }
  }
  const budgets = await budgetSnapshots(prisma, [...accounts.values()], keys, calendar);
  return {
    zones,
    changes: changes.map((c) => {
      const b = sides.get(c);
      if (!b) return strip(c);
      const extra: Record<string, unknown> = {};
      // a money change carries the budgets (their settled spend) alone: the time zone is the entity's
      if (b.kind === "account" && b.tz !== "UTC" && !isMoneyKind(c.kind)) extra.timeZone = b.tz;
      const own = budgets.get(b.id);
      if (own && Object.keys(own).length) {
        extra.budgets = own;
        zones.add(b.tz);
      }
      const more = JSON.stringify(extra);
      return {
        kind: c.kind,
        id: c.id,
        v: c.v,
        json: more === "{}" ? c.json : `${c.json!.slice(0, -1)},${more.slice(1)}`,
      };
    }),
  };
}

const strip = (c: ReadChange): PolicyChange => ({ kind: c.kind, id: c.id, v: c.v, json: c.json });
