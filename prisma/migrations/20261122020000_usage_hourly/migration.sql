-- CreateTable
CREATE TABLE "usage_hourly" (
    "account_id" UUID NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "api_key_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "errors" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost_micro" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "usage_hourly_pkey" PRIMARY KEY ("account_id","hour","api_key_id","model")
);

-- The hourly rollup follows usage_logs by itself: one statement-level trigger aggregates each INSERT's rows
-- (a settled batch, an import) and adds them in, so statistics read thousands of rows instead of millions.
-- Rows are upserted in key order so concurrent settlers lock them in the same order (no deadlocks).
-- A usage row without a key (its key was deleted) counts under the nil UUID.
CREATE FUNCTION "usage_hourly_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
  RETURN NULL;
END
$$;

CREATE TRIGGER "usage_logs_rollup" AFTER INSERT ON "usage_logs"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "usage_hourly_add"();

-- Backfill what was logged before the rollup existed.
INSERT INTO "usage_hourly" ("account_id", "hour", "api_key_id", "model", "requests", "errors", "prompt_tokens",
                            "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
SELECT "account_id", date_trunc('hour', "started_at"), COALESCE("api_key_id", '00000000-0000-0000-0000-000000000000'::uuid), "model",
       count(*), count(*) FILTER (WHERE "status" < 200 OR "status" >= 300), sum("prompt_tokens"), sum("completion_tokens"),
       sum("reasoning_tokens"), sum("cached_tokens"), sum("cost_micro")
FROM "usage_logs"
GROUP BY 1, 2, 3, 4;
