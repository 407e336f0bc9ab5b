-- Money that moves every second travels apart from policy (docs/distributed.md, "Money changes"). An update of
-- a key or an account that changed nothing but money columns (settlement's spend and balance, a top-up; and the
-- bookkeeping columns that go with them: last_used_at, updated_at) is recorded as a money change of the entity
-- ('key.money', 'account.money'), which the control plane publishes as the settled figures alone instead of the
-- whole entity. Any other column that differs (status, limits, quota, models, allowlist, expiry, budgets,
-- name …) records the entity as before.
--
-- The other columns are compared by name (as cheap per row as the trigger this replaces; comparing the rows as
-- JSON less the money columns cost five times as much). A column added to either table must be added here too:
-- control-plane/src/snapshot/feed.services.test.ts fails until it is.
CREATE FUNCTION "policy_keys_upd_split"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  money TEXT[];
  policy TEXT[];
BEGIN
  SELECT COALESCE(array_agg(p.nh) FILTER (WHERE p.money_only), '{}'),
    COALESCE(array_agg(p.nh) FILTER (WHERE NOT p.money_only AND p.nh IS NOT NULL), '{}')
      || COALESCE(array_agg(p.oh) FILTER (WHERE NOT p.money_only AND p.oh IS NOT NULL), '{}')
  INTO money, policy
  FROM (
    SELECT n.key_hash AS nh, o.key_hash AS oh, COALESCE(n.id IS NOT NULL AND o.id IS NOT NULL
      AND (n.account_id, n.name, n.key_hash, n.prefix, n.status, n.quota_micro, n.expires_at, n.allowed_models,
        n.ip_allowlist, n.rpm, n.tpm, n.concurrency, n.created_at, n.revoked_at, n.budget_day_micro,
        n.budget_week_micro, n.budget_month_micro)
      IS NOT DISTINCT FROM (o.account_id, o.name, o.key_hash, o.prefix, o.status, o.quota_micro, o.expires_at,
        o.allowed_models, o.ip_allowlist, o.rpm, o.tpm, o.concurrency, o.created_at, o.revoked_at,
        o.budget_day_micro, o.budget_week_micro, o.budget_month_micro), false) AS money_only
    FROM new_rows n FULL JOIN old_rows o ON o.id = n.id
  ) p;
  -- money kinds first: every writer locks feed rows in the same order
  IF cardinality(money) > 0 THEN PERFORM "policy_note"('key.money', money); END IF;
  IF cardinality(policy) > 0 THEN PERFORM "policy_note"('key', policy); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION "policy_accounts_upd_split"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  money TEXT[];
  policy TEXT[];
BEGIN
  SELECT COALESCE(array_agg(p.id) FILTER (WHERE p.money_only), '{}'),
    COALESCE(array_agg(p.id) FILTER (WHERE NOT p.money_only), '{}')
  INTO money, policy
  FROM (
    SELECT COALESCE(n.id, o.id)::text AS id, COALESCE(n.id IS NOT NULL AND o.id IS NOT NULL
      AND (n.name, n.email, n.status, n.kind, n.currency, n.rpm, n.tpm, n.concurrency, n.created_at, n.time_zone,
        n.budget_day_micro, n.budget_week_micro, n.budget_month_micro, n.budget_day_cap_micro,
        n.budget_week_cap_micro, n.budget_month_cap_micro)
      IS NOT DISTINCT FROM (o.name, o.email, o.status, o.kind, o.currency, o.rpm, o.tpm, o.concurrency,
        o.created_at, o.time_zone, o.budget_day_micro, o.budget_week_micro, o.budget_month_micro,
        o.budget_day_cap_micro, o.budget_week_cap_micro, o.budget_month_cap_micro), false) AS money_only
    FROM new_rows n FULL JOIN old_rows o ON o.id = n.id
  ) p;
  IF cardinality(money) > 0 THEN PERFORM "policy_note"('account.money', money); END IF;
  IF cardinality(policy) > 0 THEN PERFORM "policy_note"('account', policy); END IF;
  RETURN NULL;
END $$;

DROP TRIGGER "api_keys_policy_upd" ON "api_keys";
DROP TRIGGER "accounts_policy_upd" ON "accounts";
DROP FUNCTION "policy_keys_upd"();
CREATE TRIGGER "api_keys_policy_upd" AFTER UPDATE ON "api_keys" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_keys_upd_split"();
CREATE TRIGGER "accounts_policy_upd" AFTER UPDATE ON "accounts" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_accounts_upd_split"();
