-- Upstream key pools (issue 28, docs/routing.md): several credentials per upstream, each with the operator's id,
-- a weight, and whether it is enabled (with why not, and since when).
CREATE TABLE "upstream_keys" (
    "upstream_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "api_key_enc" TEXT NOT NULL,
    "weight" INTEGER NOT NULL DEFAULT 1,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "reason" TEXT,
    "disabled_at" TIMESTAMPTZ(3),
    "position" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upstream_keys_pkey" PRIMARY KEY ("upstream_id","id")
);

ALTER TABLE "upstream_keys" ADD CONSTRAINT "upstream_keys_upstream_id_fkey" FOREIGN KEY ("upstream_id") REFERENCES "upstreams"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A key added, changed, disabled or enabled changes the catalog the data planes route by.
CREATE TRIGGER "upstream_keys_policy" AFTER INSERT OR UPDATE OR DELETE ON "upstream_keys" FOR EACH STATEMENT EXECUTE FUNCTION "policy_catalog_changed"();
