-- Issue 29: the operators' usage across customers over 30 days read ~720 hours × (accounts × models × upstreams)
-- rows of usage_operator_hourly (432,000 at 50 accounts using 4 models on 3 upstreams every hour: 0.7 s on the
-- 2-core machine). A daily rollup with the same key but the day holds 30 × that; a span reads its whole days here
-- and only its edge hours from the hourly rollup (stats/operator.ts). The same trigger keeps it.
CREATE TABLE "usage_operator_daily" (
    "day" TIMESTAMPTZ(3) NOT NULL,
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

    CONSTRAINT "usage_operator_daily_pkey" PRIMARY KEY ("day","account_id","model","upstream")
);

INSERT INTO "usage_operator_daily" ("day", "account_id", "model", "upstream", "requests", "errors", "prompt_tokens",
                                    "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
SELECT date_trunc('day', "hour", 'UTC'), "account_id", "model", "upstream", sum("requests"), sum("errors"),
       sum("prompt_tokens"), sum("completion_tokens"), sum("reasoning_tokens"), sum("cached_tokens"), sum("cost_micro")
FROM "usage_operator_hourly"
GROUP BY 1, 2, 3, 4;

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
  INSERT INTO "usage_operator_daily" AS o ("day", "account_id", "model", "upstream", "requests", "errors", "prompt_tokens",
                                           "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
  SELECT date_trunc('day', "started_at", 'UTC'), "account_id", "model", COALESCE("upstream", ''),
         count(*), count(*) FILTER (WHERE "status" < 200 OR "status" >= 300), sum("prompt_tokens"), sum("completion_tokens"),
         sum("reasoning_tokens"), sum("cached_tokens"), sum("cost_micro")
  FROM new_rows
  GROUP BY 1, 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT ("day", "account_id", "model", "upstream") DO UPDATE SET
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
