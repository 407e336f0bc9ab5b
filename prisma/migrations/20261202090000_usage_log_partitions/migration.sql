-- Issue 29: the usage log becomes a time series. usage_logs is partitioned by day on started_at (declarative
-- partitioning): the control plane creates each day's partition ahead (usage/partitions.ts) and retention drops
-- whole partitions (MODELGATE_USAGE_RETENTION_DAYS) instead of deleting rows. A DEFAULT partition takes any row
-- whose day has no partition yet (a replay from long ago, a test's fixed date), so settlement never fails on a
-- missing partition; the control plane moves such rows into their day's partition when it creates it.
--
-- The log has no foreign keys any more: each checked every inserted row against accounts and api_keys (an index
-- probe and a row lock per row, for nothing settlement does not know already), and a cascade over a log of
-- hundreds of millions of rows is not a delete anyone wants. The primary key and the request id's uniqueness
-- include started_at, as partitioning requires: a call's started_at is fixed by the data plane when the call
-- starts and travels with every event of it, so (request_id, started_at) still makes a redelivery a no-op, and
-- the ledger's unique request id keeps a call from being charged twice whatever happens.
--
-- Converting an existing table: the old table is renamed (instant), the new one is created empty with its
-- partitions, and the rows are copied here when there are few (<= 200,000); otherwise the control plane copies
-- them in the background, newest first, in batches (usage/backfill.ts), and drops the old table when it is
-- empty. See docs/operations.md, "Usage log".

ALTER TABLE "usage_logs" RENAME TO "usage_logs_unpartitioned";
ALTER TABLE "usage_logs_unpartitioned" DROP CONSTRAINT "usage_logs_account_id_fkey";
ALTER TABLE "usage_logs_unpartitioned" DROP CONSTRAINT "usage_logs_api_key_id_fkey";
DROP TRIGGER "usage_logs_rollup" ON "usage_logs_unpartitioned";
ALTER TABLE "usage_logs_unpartitioned" RENAME CONSTRAINT "usage_logs_pkey" TO "usage_logs_unpartitioned_pkey";
ALTER INDEX "usage_logs_request_id_key" RENAME TO "usage_logs_unpartitioned_request_id_key";
DROP INDEX "usage_logs_account_id_end_user_started_at_idx";
DROP INDEX "usage_logs_account_id_model_started_at_idx";
DROP INDEX "usage_logs_account_id_started_at_idx";
DROP INDEX "usage_logs_api_key_id_started_at_idx";
DROP INDEX "usage_logs_tags_idx";

CREATE TABLE "usage_logs" (
    "id" UUID NOT NULL,
    "request_id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "api_key_id" UUID,
    "model" TEXT NOT NULL,
    "protocol" TEXT NOT NULL,
    "upstream" TEXT,
    "status" INTEGER NOT NULL,
    "error_code" TEXT,
    "prompt_tokens" INTEGER NOT NULL DEFAULT 0,
    "completion_tokens" INTEGER NOT NULL DEFAULT 0,
    "reasoning_tokens" INTEGER NOT NULL DEFAULT 0,
    "cached_tokens" INTEGER NOT NULL DEFAULT 0,
    "cost_micro" BIGINT NOT NULL DEFAULT 0,
    "latency_ms" INTEGER NOT NULL,
    "ttft_ms" INTEGER,
    "stream" BOOLEAN NOT NULL DEFAULT false,
    "client_ip" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "cache_write_5m_tokens" INTEGER NOT NULL DEFAULT 0,
    "cache_write_1h_tokens" INTEGER NOT NULL DEFAULT 0,
    "input_price" DECIMAL(30,2),
    "cached_input_price" DECIMAL(30,2),
    "cache_write_5m_price" DECIMAL(30,2),
    "cache_write_1h_price" DECIMAL(30,2),
    "output_price" DECIMAL(30,2),
    "estimated" BOOLEAN NOT NULL DEFAULT false,
    "end_user" TEXT,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "dropped" TEXT[] DEFAULT ARRAY[]::TEXT[],

    CONSTRAINT "usage_logs_pkey" PRIMARY KEY ("started_at", "id")
) PARTITION BY RANGE ("started_at");

-- Every index ends with (started_at, id) where a page is read in that order, so a keyset cursor
-- "(started_at, id) < (…)" is a bound of the index and a page reads only the rows it returns. The primary key
-- serves the operator's queries by time alone (upstream health, exports across accounts).
CREATE UNIQUE INDEX "usage_logs_request_id_started_at_key" ON "usage_logs"("request_id", "started_at");
CREATE INDEX "usage_logs_account_id_started_at_id_idx" ON "usage_logs"("account_id", "started_at", "id");
CREATE INDEX "usage_logs_api_key_id_started_at_id_idx" ON "usage_logs"("api_key_id", "started_at", "id");
CREATE INDEX "usage_logs_account_id_model_started_at_id_idx" ON "usage_logs"("account_id", "model", "started_at", "id");
CREATE INDEX "usage_logs_account_id_end_user_started_at_idx" ON "usage_logs"("account_id", "end_user", "started_at") WHERE ("end_user" IS NOT NULL);
CREATE INDEX "usage_logs_tags_idx" ON "usage_logs" USING GIN ("tags") WHERE ("tags" <> '{}');

CREATE TABLE "usage_logs_default" PARTITION OF "usage_logs" DEFAULT;

-- The operators' rollup: usage across customers by hour, account, model and upstream, so "usage across customers
-- over 30 days" reads 720 hours × (accounts × models × upstreams) rows by a key that starts with the hour,
-- never the log (usage_hourly's key starts with the account: it serves one customer at a time).
CREATE TABLE "usage_operator_hourly" (
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "account_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "upstream" TEXT NOT NULL,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "errors" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost_micro" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "usage_operator_hourly_pkey" PRIMARY KEY ("hour","account_id","model","upstream")
);

-- One statement-level trigger keeps both rollups: each INSERT's rows (a settled batch) are aggregated once per
-- (account, hour, key, model) and per (hour, account, model, upstream) and added in, in key order (concurrent
-- settlers lock rollup rows in the same order: no deadlocks). Rows copied from the unpartitioned table
-- (modelgate.usage_backfill = 'on') are in usage_hourly already: only the operators' rollup takes them.
CREATE OR REPLACE FUNCTION "usage_hourly_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('modelgate.usage_backfill', true), '') <> 'on' THEN
    INSERT INTO "usage_hourly" AS h ("account_id", "hour", "api_key_id", "model", "requests", "errors", "prompt_tokens",
                                     "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
    SELECT "account_id", date_trunc('hour', "started_at"), COALESCE("api_key_id", '00000000-0000-0000-0000-000000000000'::uuid), "model",
           count(*), count(*) FILTER (WHERE "status" < 200 OR "status" >= 300), sum("prompt_tokens"), sum("completion_tokens"),
           sum("reasoning_tokens"), sum("cached_tokens"), sum("cost_micro")
    FROM new_rows
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT ("account_id", "hour", "api_key_id", "model") DO UPDATE SET
      "requests" = h."requests" + EXCLUDED."requests",
      "errors" = h."errors" + EXCLUDED."errors",
      "prompt_tokens" = h."prompt_tokens" + EXCLUDED."prompt_tokens",
      "completion_tokens" = h."completion_tokens" + EXCLUDED."completion_tokens",
      "reasoning_tokens" = h."reasoning_tokens" + EXCLUDED."reasoning_tokens",
      "cached_tokens" = h."cached_tokens" + EXCLUDED."cached_tokens",
      "cost_micro" = h."cost_micro" + EXCLUDED."cost_micro";
  END IF;
  INSERT INTO "usage_operator_hourly" AS o ("hour", "account_id", "model", "upstream", "requests", "errors", "prompt_tokens",
                                            "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
  SELECT date_trunc('hour', "started_at"), "account_id", "model", COALESCE("upstream", ''),
         count(*), count(*) FILTER (WHERE "status" < 200 OR "status" >= 300), sum("prompt_tokens"), sum("completion_tokens"),
         sum("reasoning_tokens"), sum("cached_tokens"), sum("cost_micro")
  FROM new_rows
  GROUP BY 1, 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT ("hour", "account_id", "model", "upstream") DO UPDATE SET
    "requests" = o."requests" + EXCLUDED."requests",
    "errors" = o."errors" + EXCLUDED."errors",
    "prompt_tokens" = o."prompt_tokens" + EXCLUDED."prompt_tokens",
    "completion_tokens" = o."completion_tokens" + EXCLUDED."completion_tokens",
    "reasoning_tokens" = o."reasoning_tokens" + EXCLUDED."reasoning_tokens",
    "cached_tokens" = o."cached_tokens" + EXCLUDED."cached_tokens",
    "cost_micro" = o."cost_micro" + EXCLUDED."cost_micro";
  RETURN NULL;
END
$$;

CREATE TRIGGER "usage_logs_rollup" AFTER INSERT ON "usage_logs"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "usage_hourly_add"();

-- Day partitions for the days the old table holds (at most the last 400: older rows stay in the default
-- partition) and the next 3 days; the control plane keeps creating them ahead from here.
DO $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  first_day date;
  d date;
BEGIN
  SELECT (min("started_at") AT TIME ZONE 'UTC')::date INTO first_day FROM "usage_logs_unpartitioned";
  first_day := LEAST(GREATEST(COALESCE(first_day, today), today - 400), today);
  d := first_day;
  WHILE d <= today + 3 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF "usage_logs" FOR VALUES FROM (%L) TO (%L)',
                   'usage_logs_p' || to_char(d, 'YYYYMMDD'), d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
    d := d + 1;
  END LOOP;
END
$$;

-- A small log is copied at once (its rows are in usage_hourly already); a large one is left to the background
-- copy, which reads it newest first by this index.
DO $$
BEGIN
  IF (SELECT count(*) FROM (SELECT 1 FROM "usage_logs_unpartitioned" LIMIT 200001) s) <= 200000 THEN
    PERFORM set_config('modelgate.usage_backfill', 'on', true);
    INSERT INTO "usage_logs" SELECT "id", "request_id", "account_id", "api_key_id", "model", "protocol", "upstream",
      "status", "error_code", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro",
      "latency_ms", "ttft_ms", "stream", "client_ip", "started_at", "created_at", "input_tokens", "cache_write_5m_tokens",
      "cache_write_1h_tokens", "input_price", "cached_input_price", "cache_write_5m_price", "cache_write_1h_price",
      "output_price", "estimated", "end_user", "tags", "dropped"
    FROM "usage_logs_unpartitioned";
    PERFORM set_config('modelgate.usage_backfill', 'off', true);
    DROP TABLE "usage_logs_unpartitioned";
  ELSE
    CREATE INDEX "usage_logs_unpartitioned_started_at_idx" ON "usage_logs_unpartitioned"("started_at");
  END IF;
END
$$;
