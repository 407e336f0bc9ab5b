-- Prompt-cache write prices (null: 1.25 × input for 5 minutes, 2 × input for 1 hour; see docs/billing.md).
ALTER TABLE "models" ADD COLUMN "cache_write_5m_price_micro" BIGINT,
  ADD COLUMN "cache_write_1h_price_micro" BIGINT;
ALTER TABLE "price_contracts" ADD COLUMN "cache_write_5m_price_micro" BIGINT,
  ADD COLUMN "cache_write_1h_price_micro" BIGINT;

-- The usage log keeps the billed breakdown, the unit prices used, whether the counts were estimated, and the
-- cost attribution (end user, tags). Rows logged before keep their totals; their input is derived once here.
ALTER TABLE "usage_logs" ADD COLUMN "input_tokens" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "cache_write_5m_tokens" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "cache_write_1h_tokens" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "input_price" DECIMAL(30,2),
  ADD COLUMN "cached_input_price" DECIMAL(30,2),
  ADD COLUMN "cache_write_5m_price" DECIMAL(30,2),
  ADD COLUMN "cache_write_1h_price" DECIMAL(30,2),
  ADD COLUMN "output_price" DECIMAL(30,2),
  ADD COLUMN "estimated" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "end_user" TEXT,
  ADD COLUMN "tags" TEXT[] DEFAULT ARRAY[]::TEXT[];

UPDATE "usage_logs" SET "input_tokens" = GREATEST(0, "prompt_tokens" - "cached_tokens");

CREATE INDEX "usage_logs_account_id_end_user_started_at_idx" ON "usage_logs"("account_id", "end_user", "started_at");
CREATE INDEX "usage_logs_tags_idx" ON "usage_logs" USING GIN ("tags");
