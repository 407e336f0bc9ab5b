-- Issue 29, statistics that never scan the log: usage by end user and by tag (the console's cost attribution,
-- the 100 largest over a span) read usage_logs' rows carrying an end user or a tag, which at 10M rows is hundreds
-- of thousands of rows per month for a busy account. This rollup holds them per UTC day and value, without key
-- or model: with those, it would hold about a row per attributed call (an end user seldom makes two calls with
-- the same key and model in one hour), no smaller than the log. A span reads its whole days here and its partial
-- days at either edge from the log (stats/aggregate.ts); an attribution filtered by key or model reads the log.
-- dimension: 'end_user' or 'tag' (a call with several tags counts under each).
CREATE TABLE "usage_attribution_daily" (
    "account_id" UUID NOT NULL,
    "dimension" TEXT NOT NULL,
    "day" TIMESTAMPTZ(3) NOT NULL,
    "value" TEXT NOT NULL,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "errors" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost_micro" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "usage_attribution_daily_pkey" PRIMARY KEY ("account_id","dimension","day","value")
);

-- The rows of a statement added to the rollup: new rows (INSERT), or an estimate's replacement (UPDATE) as its new
-- rows minus its old ones, so whatever an update changes, the rollup follows. One body for both: the transition
-- tables are seen by the function's dynamic SQL too, and an INSERT has no old_rows. It does not look at
-- modelgate.usage_backfill: the rows the background conversion copies later (from usage_logs_unpartitioned) are
-- not in this rollup yet, and the rows already in usage_logs are counted below, once.
CREATE FUNCTION "usage_attribution_add"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  src TEXT := 'SELECT account_id, started_at, end_user, tags, 1 AS sign, status, prompt_tokens, completion_tokens,
                 reasoning_tokens, cached_tokens, cost_micro FROM new_rows';
BEGIN
  IF TG_OP = 'UPDATE' THEN
    src := src || ' UNION ALL SELECT account_id, started_at, end_user, tags, -1, status, prompt_tokens,
                    completion_tokens, reasoning_tokens, cached_tokens, cost_micro FROM old_rows';
  END IF;
  EXECUTE format($q$
    INSERT INTO usage_attribution_daily AS a (account_id, dimension, day, value, requests, errors, prompt_tokens,
        completion_tokens, reasoning_tokens, cached_tokens, cost_micro)
    SELECT r.account_id, d.dimension, date_trunc('day', r.started_at, 'UTC'), d.value, sum(r.sign),
           COALESCE(sum(r.sign) FILTER (WHERE r.status < 200 OR r.status >= 300), 0), sum(r.sign * r.prompt_tokens),
           sum(r.sign * r.completion_tokens), sum(r.sign * r.reasoning_tokens), sum(r.sign * r.cached_tokens),
           sum(r.sign * r.cost_micro)
    FROM (%s) r
    CROSS JOIN LATERAL (
      SELECT 'end_user' AS dimension, r.end_user AS value WHERE r.end_user IS NOT NULL
      UNION ALL SELECT 'tag', t FROM unnest(r.tags) AS t
    ) d
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (account_id, dimension, day, value) DO UPDATE SET
      requests = a.requests + EXCLUDED.requests,
      errors = a.errors + EXCLUDED.errors,
      prompt_tokens = a.prompt_tokens + EXCLUDED.prompt_tokens,
      completion_tokens = a.completion_tokens + EXCLUDED.completion_tokens,
      reasoning_tokens = a.reasoning_tokens + EXCLUDED.reasoning_tokens,
      cached_tokens = a.cached_tokens + EXCLUDED.cached_tokens,
      cost_micro = a.cost_micro + EXCLUDED.cost_micro$q$, src);
  RETURN NULL;
END
$$;

CREATE TRIGGER "usage_attribution_insert" AFTER INSERT ON "usage_logs"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "usage_attribution_add"();
CREATE TRIGGER "usage_attribution_update" AFTER UPDATE ON "usage_logs"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "usage_attribution_add"();

-- The rows already in the partitioned log (the ones still in usage_logs_unpartitioned reach the rollup through
-- the trigger as the background conversion copies them). The partial end-user and tags indexes hold exactly them.
INSERT INTO "usage_attribution_daily" ("account_id", "dimension", "day", "value", "requests", "errors",
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
SELECT l."account_id", d."dimension", date_trunc('day', l."started_at", 'UTC'), d."value", count(*),
       count(*) FILTER (WHERE l."status" < 200 OR l."status" >= 300), sum(l."prompt_tokens"),
       sum(l."completion_tokens"), sum(l."reasoning_tokens"), sum(l."cached_tokens"), sum(l."cost_micro")
FROM "usage_logs" l
CROSS JOIN LATERAL (
  SELECT 'end_user' AS "dimension", l."end_user" AS "value" WHERE l."end_user" IS NOT NULL
  UNION ALL SELECT 'tag', t FROM unnest(l."tags") AS t
) d
WHERE l."end_user" IS NOT NULL OR l."tags" <> '{}'
GROUP BY 1, 2, 3, 4;
