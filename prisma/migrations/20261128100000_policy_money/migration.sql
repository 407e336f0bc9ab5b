-- Money that moves every second travels apart from policy (docs/distributed.md, "Money changes"). An update of
-- a key or an account that changed nothing but money columns (settlement's spend and balance, a top-up; and the
-- bookkeeping columns that go with them) is recorded as a money change of the entity ('key.money',
-- 'account.money'), which the control plane publishes as the settled figures alone instead of the whole entity.
-- Any other column that differs (status, limits, quota, models, allowlist, expiry, budgets, name, a column added
-- later …) records the entity as before. Rows are compared as JSON less the money columns, so a column added
-- later counts as policy without anyone having to remember this trigger.
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
    SELECT n.key_hash AS nh, o.key_hash AS oh,
      COALESCE(n.key_hash = o.key_hash
        AND to_jsonb(n) - '{spent_micro,last_used_at,updated_at}'::text[]
          = to_jsonb(o) - '{spent_micro,last_used_at,updated_at}'::text[], false) AS money_only
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
    SELECT COALESCE(n.id, o.id)::text AS id,
      COALESCE(to_jsonb(n) - '{balance_micro,spent_micro,updated_at}'::text[]
        = to_jsonb(o) - '{balance_micro,spent_micro,updated_at}'::text[], false) AS money_only
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
