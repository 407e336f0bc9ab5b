-- Issue 29, the cost of a settlement: the attribution rollup's INSERT trigger ran its query as dynamic SQL (one body
-- for INSERT and UPDATE), which Postgres parses and plans on every statement: about half of the usage INSERT's
-- fixed cost in a batch of a few dozen calls. The INSERT trigger now runs a static query (planned once per
-- connection) and skips at once a batch without end users or tags; the UPDATE trigger (an estimate's replacement,
-- rare) keeps the dynamic body.
CREATE FUNCTION "usage_attribution_add_new"() RETURNS trigger LANGUAGE plpgsql AS $$
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
  RETURN NULL;
END
$$;

DROP TRIGGER "usage_attribution_insert" ON "usage_logs";
CREATE TRIGGER "usage_attribution_insert" AFTER INSERT ON "usage_logs"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "usage_attribution_add_new"();
