-- Issue 29, settlement in bulk: the ledger holds one line per account per settled batch instead of one per call.
-- A batch's usage rows carry its id (usage_logs.batch_id); its ledger line for an account has the same id, the
-- number of the account's calls in the batch and their summed cost ("usage"). An exact count replacing an
-- estimate later is a "correction" line carrying the corrected rows' batch id, so for every batch and account the
-- ledger's lines sum to minus the rows' cost_micro. Rows and ledger lines settled before this keep their per-call
-- form (request_id set, batch_id null). No index on usage_logs.batch_id: every row would pay for it, and a
-- batch's rows are found by account and time like any other.
ALTER TYPE "LedgerKind" ADD VALUE 'usage';
ALTER TYPE "LedgerKind" ADD VALUE 'correction';

ALTER TABLE "ledger_entries" ADD COLUMN "batch_id" UUID, ADD COLUMN "calls" INTEGER;
CREATE INDEX "ledger_entries_batch_id_idx" ON "ledger_entries"("batch_id");

-- Nullable without a default: a catalog change only, on the partitioned table and every partition.
ALTER TABLE "usage_logs" ADD COLUMN "batch_id" UUID;
