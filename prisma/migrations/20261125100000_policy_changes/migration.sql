-- The policy change feed: one row per key (by hash), account, or the model catalog, naming the transaction
-- that changed it last. The control plane reads the rows committed since its last cursor (a pg_snapshot) and
-- publishes only those entities, so a change costs the same at 1,000 keys as at 1,000,000.
CREATE TABLE "policy_changes" (
    "kind" TEXT NOT NULL,
    "entity" TEXT NOT NULL,
    "version" BIGINT NOT NULL,
    "xid" BIGINT NOT NULL,

    CONSTRAINT "policy_changes_pkey" PRIMARY KEY ("kind","entity")
);

CREATE INDEX "policy_changes_xid_idx" ON "policy_changes"("xid");

CREATE SEQUENCE "policy_version_seq";

-- Statement-level triggers with transition tables: a bulk insert or a settlement batch records its entities in
-- one statement. Entities are upserted in order so concurrent writers lock feed rows in the same order.
CREATE FUNCTION "policy_note"(kinds TEXT, entities TEXT[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO "policy_changes" ("kind", "entity", "version", "xid")
  SELECT kinds, e, nextval('policy_version_seq'), pg_current_xact_id()::text::bigint
  FROM (SELECT DISTINCT unnest(entities) AS e ORDER BY 1) s
  ON CONFLICT ("kind", "entity") DO UPDATE SET "version" = EXCLUDED."version", "xid" = EXCLUDED."xid";
$$;

CREATE FUNCTION "policy_keys_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('key', ARRAY(SELECT "key_hash" FROM new_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION "policy_keys_old"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('key', ARRAY(SELECT "key_hash" FROM old_rows));
  RETURN NULL;
END $$;
-- An update records the old hash as well as the new one: an update that changed a key's hash (none does today)
-- must also retire the old one.
CREATE FUNCTION "policy_keys_upd"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('key', ARRAY(SELECT "key_hash" FROM new_rows UNION SELECT "key_hash" FROM old_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION "policy_accounts_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('account', ARRAY(SELECT "id"::text FROM new_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION "policy_accounts_old"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('account', ARRAY(SELECT "id"::text FROM old_rows));
  RETURN NULL;
END $$;
-- A contract is part of its account's policy.
CREATE FUNCTION "policy_contracts_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('account', ARRAY(SELECT "account_id"::text FROM new_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION "policy_contracts_old"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('account', ARRAY(SELECT "account_id"::text FROM old_rows));
  RETURN NULL;
END $$;
-- Models, routes and upstreams are few: any change republishes the catalog as one entity.
CREATE FUNCTION "policy_catalog_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "policy_note"('catalog', ARRAY['']);
  RETURN NULL;
END $$;

CREATE TRIGGER "api_keys_policy_ins" AFTER INSERT ON "api_keys" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_keys_new"();
CREATE TRIGGER "api_keys_policy_upd" AFTER UPDATE ON "api_keys" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_keys_upd"();
CREATE TRIGGER "api_keys_policy_del" AFTER DELETE ON "api_keys" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_keys_old"();
CREATE TRIGGER "accounts_policy_ins" AFTER INSERT ON "accounts" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_accounts_new"();
CREATE TRIGGER "accounts_policy_upd" AFTER UPDATE ON "accounts" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_accounts_new"();
CREATE TRIGGER "accounts_policy_del" AFTER DELETE ON "accounts" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_accounts_old"();
CREATE TRIGGER "price_contracts_policy_ins" AFTER INSERT ON "price_contracts" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_contracts_new"();
CREATE TRIGGER "price_contracts_policy_upd" AFTER UPDATE ON "price_contracts" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_contracts_new"();
CREATE TRIGGER "price_contracts_policy_del" AFTER DELETE ON "price_contracts" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "policy_contracts_old"();
CREATE TRIGGER "models_policy" AFTER INSERT OR UPDATE OR DELETE ON "models" FOR EACH STATEMENT EXECUTE FUNCTION "policy_catalog_changed"();
CREATE TRIGGER "routes_policy" AFTER INSERT OR UPDATE OR DELETE ON "routes" FOR EACH STATEMENT EXECUTE FUNCTION "policy_catalog_changed"();
CREATE TRIGGER "upstreams_policy" AFTER INSERT OR UPDATE OR DELETE ON "upstreams" FOR EACH STATEMENT EXECUTE FUNCTION "policy_catalog_changed"();
