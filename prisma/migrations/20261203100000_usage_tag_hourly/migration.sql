-- Issue 29, statistics filtered by a tag: the console's statistics for one tag (its time series, by model, by
-- key) read every log row carrying it (4.4 s over 30 days at 10M rows, a seventh of them tagged), and the spend
-- by tag read the two edge days of its span from the log (p95 216 ms). This rollup holds the tagged calls per
-- account, tag, hour, key and model (a call with several tags counts under each): for a tag, about as many rows
-- an hour as the keys and models it is used with. Whole hours are read here, the partial hours at either edge
-- from the log (stats/aggregate.ts). Kept by the attribution triggers on usage_logs, in the same statements.
CREATE TABLE "usage_tag_hourly" (
    "account_id" UUID NOT NULL,
    "tag" TEXT NOT NULL,
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

    CONSTRAINT "usage_tag_hourly_pkey" PRIMARY KEY ("account_id","tag","hour","api_key_id","model")
);
-- the spend by tag over a span reads every tag of the account's hours
CREATE INDEX "usage_tag_hourly_account_id_hour_idx" ON "usage_tag_hourly"("account_id", "hour");

-- INSERT: static queries, planned once per connection (20261203090000).
CREATE OR REPLACE FUNCTION "usage_attribution_add_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_attribution_daily AS a (account_id, dimension, day, value, requests, errors, prompt_tokens,
      completion_tokens, reasoning_tokens, cached_tokens, cost_micro)
  SELECT r.account_id, d.dimension, date_trunc('day', r.started_at, 'UTC'), d.value, count(*),
         count(*) FILTER (WHERE r.status < 200 OR r.status >= 300), sum(r.prompt_tokens), sum(r.completion_tokens),
         sum(r.reasoning_tokens), sum(r.cached_tokens), sum(r.cost_micro)
  FROM new_rows r
  CROSS JOIN LATERAL (
    SELECT 'end_user' AS dimension, r.end_user AS value WHERE r.end_user IS NOT NULL
    UNION ALL SELECT 'tag', t FROM unnest(r.tags) AS t
  ) d
  WHERE r.end_user IS NOT NULL OR r.tags <> '{}'
  GROUP BY 1, 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, dimension, day, value) DO UPDATE SET
    requests = a.requests + EXCLUDED.requests,
    errors = a.errors + EXCLUDED.errors,
    prompt_tokens = a.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = a.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = a.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = a.cached_tokens + EXCLUDED.cached_tokens,
    cost_micro = a.cost_micro + EXCLUDED.cost_micro;
  INSERT INTO usage_tag_hourly AS h (account_id, tag, hour, api_key_id, model, requests, errors, prompt_tokens,
      completion_tokens, reasoning_tokens, cached_tokens, cost_micro)
  SELECT r.account_id, t, date_trunc('hour', r.started_at), COALESCE(r.api_key_id, '00000000-0000-0000-0000-000000000000'::uuid),
         r.model, count(*), count(*) FILTER (WHERE r.status < 200 OR r.status >= 300), sum(r.prompt_tokens),
         sum(r.completion_tokens), sum(r.reasoning_tokens), sum(r.cached_tokens), sum(r.cost_micro)
  FROM new_rows r CROSS JOIN LATERAL unnest(r.tags) AS t
  WHERE r.tags <> '{}'
  GROUP BY 1, 2, 3, 4, 5
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (account_id, tag, hour, api_key_id, model) DO UPDATE SET
    requests = h.requests + EXCLUDED.requests,
    errors = h.errors + EXCLUDED.errors,
    prompt_tokens = h.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = h.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = h.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = h.cached_tokens + EXCLUDED.cached_tokens,
    cost_micro = h.cost_micro + EXCLUDED.cost_micro;
  RETURN NULL;
END
$$;

-- UPDATE (an estimate's replacement): the new rows minus the old ones, in both rollups.
CREATE OR REPLACE FUNCTION "usage_attribution_add"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  src TEXT := 'SELECT account_id, api_key_id, model, started_at, end_user, tags, 1 AS sign, status, prompt_tokens,
                 completion_tokens, reasoning_tokens, cached_tokens, cost_micro FROM new_rows';
BEGIN
  IF TG_OP = 'UPDATE' THEN
    src := src || ' UNION ALL SELECT account_id, api_key_id, model, started_at, end_user, tags, -1, status,
                    prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, cost_micro FROM old_rows';
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
  EXECUTE format($q$
    INSERT INTO usage_tag_hourly AS h (account_id, tag, hour, api_key_id, model, requests, errors, prompt_tokens,
        completion_tokens, reasoning_tokens, cached_tokens, cost_micro)
    SELECT r.account_id, t, date_trunc('hour', r.started_at),
           COALESCE(r.api_key_id, '00000000-0000-0000-0000-000000000000'::uuid), r.model, sum(r.sign),
           COALESCE(sum(r.sign) FILTER (WHERE r.status < 200 OR r.status >= 300), 0), sum(r.sign * r.prompt_tokens),
           sum(r.sign * r.completion_tokens), sum(r.sign * r.reasoning_tokens), sum(r.sign * r.cached_tokens),
           sum(r.sign * r.cost_micro)
    FROM (%s) r CROSS JOIN LATERAL unnest(r.tags) AS t
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (account_id, tag, hour, api_key_id, model) DO UPDATE SET
      requests = h.requests + EXCLUDED.requests,
      errors = h.errors + EXCLUDED.errors,
      prompt_tokens = h.prompt_tokens + EXCLUDED.prompt_tokens,
      completion_tokens = h.completion_tokens + EXCLUDED.completion_tokens,
      reasoning_tokens = h.reasoning_tokens + EXCLUDED.reasoning_tokens,
      cached_tokens = h.cached_tokens + EXCLUDED.cached_tokens,
      cost_micro = h.cost_micro + EXCLUDED.cost_micro$q$, src);
  RETURN NULL;
END
$$;

-- The tagged rows already in the partitioned log (those still in usage_logs_unpartitioned reach the rollup
-- through the trigger as the background conversion copies them).
INSERT INTO "usage_tag_hourly" ("account_id", "tag", "hour", "api_key_id", "model", "requests", "errors",
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_micro")
SELECT l."account_id", t, date_trunc('hour', l."started_at"),
       COALESCE(l."api_key_id", '00000000-0000-0000-0000-000000000000'::uuid), l."model", count(*),
       count(*) FILTER (WHERE l."status" < 200 OR l."status" >= 300), sum(l."prompt_tokens"),
       sum(l."completion_tokens"), sum(l."reasoning_tokens"), sum(l."cached_tokens"), sum(l."cost_micro")
FROM "usage_logs" l CROSS JOIN LATERAL unnest(l."tags") AS t
WHERE l."tags" <> '{}'
GROUP BY 1, 2, 3, 4, 5;
