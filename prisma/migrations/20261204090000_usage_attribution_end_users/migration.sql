-- Issue 29, the cost of a settlement: since the hourly tag rollup (20261203100000) answers every grouping and
-- filter by tag, nothing reads usage_attribution_daily's 'tag' rows, yet each tagged call still upserted one
-- per tag. The attribution triggers now keep only the end users there (and the tags in usage_tag_hourly, as
-- before), and the tag rows go.

CREATE OR REPLACE FUNCTION "usage_attribution_add_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_attribution_daily AS a (account_id, dimension, day, value, requests, errors, prompt_tokens,
      completion_tokens, reasoning_tokens, cached_tokens, cost_micro)
  SELECT r.account_id, 'end_user', date_trunc('day', r.started_at, 'UTC'), r.end_user, count(*),
         count(*) FILTER (WHERE r.status < 200 OR r.status >= 300), sum(r.prompt_tokens), sum(r.completion_tokens),
         sum(r.reasoning_tokens), sum(r.cached_tokens), sum(r.cost_micro)
  FROM new_rows r
  WHERE r.end_user IS NOT NULL
  GROUP BY 1, 3, 4
  ORDER BY 1, 3, 4
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
    SELECT r.account_id, 'end_user', date_trunc('day', r.started_at, 'UTC'), r.end_user, sum(r.sign),
           COALESCE(sum(r.sign) FILTER (WHERE r.status < 200 OR r.status >= 300), 0), sum(r.sign * r.prompt_tokens),
           sum(r.sign * r.completion_tokens), sum(r.sign * r.reasoning_tokens), sum(r.sign * r.cached_tokens),
           sum(r.sign * r.cost_micro)
    FROM (%s) r
    WHERE r.end_user IS NOT NULL
    GROUP BY 1, 3, 4
    ORDER BY 1, 3, 4
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

DELETE FROM "usage_attribution_daily" WHERE "dimension" = 'tag';
