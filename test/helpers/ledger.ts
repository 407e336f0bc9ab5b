import { expect } from "vitest";
import type { Database } from "../../control-plane/src/db/client.ts";

/** What reconciling usage rows with the ledger needs of a row. */
export interface SettledRow {
  accountId: string;
  batchId: string | null;
  costMicro: bigint;
}

/**
 * Checks the ledger against the settlement batches of some usage rows: for each batch and account, its ledger
 * lines (a usage line, and correction lines when exact counts replaced estimates) sum to minus the cost of all
 * the account's rows in that batch, and the usage line counts those rows. Settlement writes one ledger line per
 * account per batch, so a call is charged once exactly when its row is in one batch whose lines match its rows.
 * Returns the lines found.
 */
export async function expectLedgerMatchesBatches(prisma: Database["prisma"], rows: readonly SettledRow[]) {
  const pairs = new Map<string, { batchId: string; accountId: string }>();
  for (const r of rows) {
    expect(r.batchId, "a settled row carries its batch id").not.toBeNull();
    pairs.set(`${r.batchId}/${r.accountId}`, { batchId: r.batchId!, accountId: r.accountId });
  }
  const lines = [];
  for (const { batchId, accountId } of pairs.values()) {
    const batchRows = await prisma.usageLog.findMany({ where: { batchId, accountId }, select: { costMicro: true } });
    const mine = await prisma.ledgerEntry.findMany({ where: { batchId, accountId } });
    const cost = batchRows.reduce((s, r) => s + r.costMicro, 0n);
    expect(-mine.reduce((s, l) => s + l.amountMicro, 0n), `batch ${batchId}, account ${accountId}`).toBe(cost);
    const usage = mine.filter((l) => l.kind === "usage");
    // (an account whose new calls in the batch were all free has no usage line: nothing moved)
    if (usage.length > 0) expect(usage.map((l) => l.calls)).toEqual([batchRows.length]);
    lines.push(...mine);
  }
  return lines;
}
